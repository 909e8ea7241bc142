package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
)

// maxPayloadEdit bounds an edited payload (the form's body limit).
const maxPayloadEdit = 1 << 20

// replayEditPayload replaces one item's payload of the requester's own
// request before approval: a new intent, the original message id.
func (s *Server) replayEditPayload(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	dl, err := strconv.ParseInt(c.Param("dl"), 10, 64)
	if err != nil {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such item.")
	}
	payload := c.FormValue("payload")
	if len(payload) > maxPayloadEdit {
		return s.requestFormError(c, quarantine.Errorf(quarantine.EINVALID, "a payload may be at most %d bytes", maxPayloadEdit), "payload")
	}
	err = s.deps.Replays.EditPayload(c.Request().Context(), req.ID, dl, userOf(c).Actor, []byte(payload), authz.RequestMeta(c))
	if err != nil {
		return s.requestFormError(c, err, "payload")
	}
	s.flash(c, "Payload saved: this is a new intent, to be approved again.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}
