package web

import (
	"net/http"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// triageRoutes are the dashboard, the quarantine list, error groups and the
// message detail. The dashboard itself is "/" (home sends readers of dead
// letters there); the handlers restrict every query to the caller's tenants.
func (s *Server) triageRoutes() []Route {
	dl := s.deadLetterLocator()
	return []Route{
		perm(http.MethodGet, "/deadletters", authz.ObjDeadLetter, authz.ActRead, s.deadLetterList).lists(),
		perm(http.MethodGet, "/deadletters/count", authz.ObjDeadLetter, authz.ActRead, s.deadLetterCount).lists(),
		perm(http.MethodGet, "/deadletters/:id", authz.ObjDeadLetter, authz.ActRead, s.deadLetterShow).of(s.deadLetterPageLocator()),
		perm(http.MethodGet, "/deadletters/:id/payload", authz.ObjDeadLetter, authz.ActDownload, s.deadLetterPayload).of(dl).downloads(DownloadPayload, startsPayload),
		perm(http.MethodGet, "/deadletters/:id/error.txt", authz.ObjDeadLetter, authz.ActRead, s.deadLetterText(dlq.TextError)).of(dl).sends(DownloadText),
		perm(http.MethodGet, "/deadletters/:id/headers.json", authz.ObjDeadLetter, authz.ActRead, s.deadLetterText(dlq.TextHeaders)).of(dl).sends(DownloadText),
		perm(http.MethodGet, "/deadletters/:id/stack.txt", authz.ObjDeadLetter, authz.ActRead, s.deadLetterText(dlq.TextStack)).of(dl).sends(DownloadText),
		perm(http.MethodGet, "/groups", authz.ObjDeadLetter, authz.ActRead, s.groupList).lists(),
		perm(http.MethodGet, views.PathGroupOffer, authz.ObjDeadLetter, authz.ActRead, s.groupOffer).lists(),
		perm(http.MethodPost, views.PathGroupTriage, authz.ObjDeadLetter, authz.ActTriage, s.groupSave).names(),
		perm(http.MethodPost, views.PathGroupSnooze, authz.ObjDeadLetter, authz.ActTriage, s.groupSnooze).names(),
		perm(http.MethodPost, views.PathGroupWake, authz.ObjDeadLetter, authz.ActTriage, s.groupWake).names(),
		perm(http.MethodPost, views.PathGroupOwner, authz.ObjDeadLetter, authz.ActTriage, s.groupAssign).names(),
		perm(http.MethodPost, views.PathGroupNote, authz.ObjDeadLetter, authz.ActTriage, s.groupNote).names(),
	}
}
