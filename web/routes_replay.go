package web

import (
	"net/http"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// replayObjects is the object of routes that act on replays of any class
// (the family of every class's object, "replay:*"): the route needs the
// action on the replays of some class (Permission), the handler checks
// the class of the request or dead letters it touches.
var replayObjects = authz.ReplayObject(string(replaypolicy.AnyClass))

// replayRoutes are replay requests, approvals, emergency stops and
// reconciliation, discard, resolve and fix markers (one route each, so
// that each has its own permission), and the policy page.
func (s *Server) replayRoutes() []Route {
	req, batch, dl, selection := s.requestLocator(), s.batchLocator(), s.deadLetterLocator(), s.selectionLocator()
	return []Route{
		perm(http.MethodPost, "/replay", replayObjects, authz.ActRequest, s.replayCreate).selects(selection),
		perm(http.MethodPost, "/replay/filter", replayObjects, authz.ActRequest, s.replayFilter).lists(),
		perm(http.MethodGet, "/replay/batches/:batch", replayObjects, authz.ActRequest, s.replayConfirm).of(batch),
		perm(http.MethodPost, "/replay/batches/:batch", replayObjects, authz.ActRequest, s.replaySubmit).of(batch),
		perm(http.MethodGet, views.PathReplays, authz.ObjDeadLetter, authz.ActRead, s.replayList).lists(),
		perm(http.MethodGet, "/replay/requests/:id", authz.ObjDeadLetter, authz.ActRead, s.replayRequest).of(req),
		perm(http.MethodGet, "/replay/requests/:id/progress", authz.ObjDeadLetter, authz.ActRead, s.replayProgress).of(req),
		perm(http.MethodPost, "/replay/requests/:id/approve", replayObjects, authz.ActApprove, s.replayApprove).of(req),
		perm(http.MethodPost, "/replay/requests/:id/reject", replayObjects, authz.ActReject, s.replayReject).of(req),
		perm(http.MethodPost, "/replay/requests/:id/cancel", replayObjects, authz.ActCancel, s.replayCancel).of(req),
		// What an ended request did not replay, drafted anew: as the
		// list's Replay… of a selection, on the request's class.
		perm(http.MethodPost, "/replay/requests/:id/again", replayObjects, authz.ActRequest, s.replayAgain).of(req),
		perm(http.MethodGet, "/replay/requests/:id/items/:dl/payload", authz.ObjDeadLetter, authz.ActDownload, s.replayItemPayload).of(req).downloads(DownloadPayload, startsItemPayload),
		perm(http.MethodPost, "/replay/requests/:id/items/:dl/payload", replayObjects, authz.ActRequest, s.replayEditPayload).of(req).reads(BodyPayload),
		perm(http.MethodPost, "/replay/requests/:id/items/:dl/reconcile", replayObjects, authz.ActReconcile, s.replayReconcile).of(req),
		perm(http.MethodPost, "/replay/requests/:id/stop", replayObjects, authz.ActStop, s.replayStop).of(req),
		perm(http.MethodGet, "/replay/stop", replayObjects, authz.ActStop, s.replayStopPage).lists(),
		perm(http.MethodPost, "/replay/stop", replayObjects, authz.ActStop, s.replayStopAll).names(),
		perm(http.MethodGet, "/approvals", replayObjects, authz.ActApprove, s.approvalList).lists(),
		perm(http.MethodGet, "/policy", authz.ObjPolicy, authz.ActRead, s.policyPage).global(),
		perm(http.MethodPost, "/deadletters/:id/discard", authz.ObjDeadLetter, authz.ActDiscard, s.deadLetterDiscard).of(dl),
		perm(http.MethodPost, "/deadletters/:id/resolve", authz.ObjDeadLetter, authz.ActResolve, s.deadLetterResolve).of(dl),
		perm(http.MethodPost, "/deadletters/:id/fix", authz.ObjDeadLetter, authz.ActFix, s.fixMarkerCreate).of(dl),
		perm(http.MethodPost, "/deadletters/discard", authz.ObjDeadLetter, authz.ActDiscard, s.deadLetterDiscardBulk).selects(selection),
		perm(http.MethodPost, "/deadletters/resolve", authz.ObjDeadLetter, authz.ActResolve, s.deadLetterResolveBulk).selects(selection),
		perm(http.MethodPost, "/deadletters/discard/filter", authz.ObjDeadLetter, authz.ActDiscard, s.deadLetterDiscardFilter).lists(),
		perm(http.MethodPost, "/deadletters/resolve/filter", authz.ObjDeadLetter, authz.ActResolve, s.deadLetterResolveFilter).lists(),
	}
}
