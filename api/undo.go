package api

// UndoRequest is the body of POST /v1/sessions/{id}/undo.
type UndoRequest struct {
	// Steps is how many executions to go back (absent: 1).
	Steps int `json:"steps,omitempty"`
}

// UndoResult is its answer.
type UndoResult struct {
	Undone int `json:"undone"`
}
