package web

import (
	"net/http"

	"github.com/quarantine-console/quarantine/authz"
)

// replayObjects is the object of routes that act on replays of any class;
// handlers check the class of the request they touch.
const replayObjects = "replay:*"

// replayRoutes are replay requests, approvals, discard and resolve, and the
// policy page.
func (s *Server) replayRoutes() []Route {
	return []Route{
		perm(http.MethodPost, "/replay", replayObjects, authz.ActRequest, s.replayCreate),
		perm(http.MethodPost, "/replay/filter", replayObjects, authz.ActRequest, s.replayFilter),
		perm(http.MethodGet, "/replay/batches/:batch", replayObjects, authz.ActRequest, s.replayConfirm),
		perm(http.MethodPost, "/replay/batches/:batch", replayObjects, authz.ActRequest, s.replaySubmit),
		perm(http.MethodGet, "/replay/requests/:id", authz.ObjDeadLetter, authz.ActRead, s.replayRequest),
		perm(http.MethodGet, "/replay/requests/:id/progress", authz.ObjDeadLetter, authz.ActRead, s.replayProgress),
		perm(http.MethodPost, "/replay/requests/:id/approve", replayObjects, authz.ActApprove, s.replayApprove),
		perm(http.MethodPost, "/replay/requests/:id/reject", replayObjects, authz.ActReject, s.replayReject),
		perm(http.MethodPost, "/replay/requests/:id/cancel", replayObjects, authz.ActCancel, s.replayCancel),
		perm(http.MethodPost, "/replay/requests/:id/items/:dl/payload", replayObjects, authz.ActRequest, s.replayEditPayload),
		perm(http.MethodGet, "/approvals", replayObjects, authz.ActApprove, s.approvalList),
		perm(http.MethodGet, "/policy", authz.ObjPolicy, authz.ActRead, s.policyPage),
		perm(http.MethodPost, "/deadletters/:id/discard", authz.ObjDeadLetter, authz.ActDiscard, s.deadLetterDiscard),
		perm(http.MethodPost, "/deadletters/:id/resolve", authz.ObjDeadLetter, authz.ActResolve, s.deadLetterResolve),
		perm(http.MethodPost, "/deadletters/close", authz.ObjDeadLetter, authz.ActDiscard, s.deadLetterCloseBulk),
	}
}
