package server

import (
	"net/http"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, fn handlerFunc) { mux.Handle(pattern, s.wrap(fn)) }
	h("GET /v1/health", s.health)
	h("GET /v1/info", s.info)
	h("POST /v1/sessions", s.createSession)
	h("GET /v1/sessions", s.listSessions)
	h("GET /v1/sessions/{id}", s.getSession)
	h("DELETE /v1/sessions/{id}", s.deleteSession)
	h("POST /v1/sessions/{id}/stop", s.lifecycle(s.b.StopSession))
	h("POST /v1/sessions/{id}/start", s.lifecycle(s.b.StartSession))
	h("POST /v1/sessions/{id}/restart", s.lifecycle(s.b.RestartSession))
	h("POST /v1/sessions/{id}/exec", s.exec)
	h("GET /v1/sessions/{id}/executions", s.executions)
	h("PUT /v1/sessions/{id}/files", s.putFile)
	h("GET /v1/sessions/{id}/files", s.getFile)
	h("DELETE /v1/sessions/{id}/files", s.deleteFile)
	h("GET /v1/sessions/{id}/stats", s.stats)
	h("POST /v1/run", s.run)
	h("GET /v1/templates", s.listTemplates)
	h("POST /v1/templates", s.addTemplate)
	h("GET /v1/templates/{name}", s.getTemplate)
	h("DELETE /v1/templates/{name}", s.deleteTemplate)
	h("PUT /v1/templates/{name}/rootfs", s.importRootfs)
	if s.o.Metrics != nil {
		mux.Handle("GET /metrics", s.o.Metrics)
	}
	h("/", s.notFound)
	return mux
}
