// Type declarations of sandboxd/langchain (src/langchain.js), written by
// hand; test/types.test.js checks them as it does index.d.ts.

import { DynamicStructuredTool } from "@langchain/core/tools";
import type { Sandbox, ToolInputSchema, ToolNames, Toolbox, ToolboxOptions } from "./index.js";

/** A sandboxd tool: bad arguments are an error result, not a thrown ToolInputParsingException. */
export declare class SandboxdTool extends DynamicStructuredTool<ToolInputSchema> {
  /** The Toolbox its calls run in. */
  readonly toolbox: Toolbox;
}

/**
 * LangChain tools of a sandbox (or a Toolbox): the result's text is the
 * content, the ToolResult the artifact.
 */
export declare function langchainTools(
  sandboxOrToolbox: Sandbox | Toolbox,
  opts?: { names?: ToolNames } & ToolboxOptions,
): SandboxdTool[];
