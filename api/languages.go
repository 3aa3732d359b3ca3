package api

// Languages an execution can be written in.
const (
	LanguagePython = "python"
	LanguageShell  = "shell"
	// LanguageJavaScript runs in node, the template's (its image must have
	// it): the session's JavaScript interpreter, or a javascript context's.
	LanguageJavaScript = "javascript"
)
