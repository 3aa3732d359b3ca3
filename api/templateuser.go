package api

// TemplateUser is the user a template's sessions run code as, by name:
// the passwd entry of uid 1000 in them (their code always runs as that
// uid), and its home, where code starts. Home is "/workspace" or a folder
// right under /home (e.g. "/home/user"), which shows the workspace too.
// A template without one has "sandbox" at /workspace.
type TemplateUser struct {
	Name string `json:"name"`
	Home string `json:"home,omitempty"`
}
