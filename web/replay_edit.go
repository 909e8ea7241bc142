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

// payloadForm is one item's new payload.
type payloadForm struct {
	Item    string // the :dl parameter
	Payload string
}

// Validate returns the item and the payload, or an error: not found for an
// item that is not an id, invalid for a payload over maxPayloadEdit.
func (f payloadForm) Validate() (int64, []byte, error) {
	dl, err := strconv.ParseInt(f.Item, 10, 64)
	if err != nil {
		return 0, nil, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such item.")
	}
	if len(f.Payload) > maxPayloadEdit {
		return 0, nil, quarantine.Errorf(quarantine.EINVALID, "a payload may be at most %d bytes", maxPayloadEdit)
	}
	return dl, []byte(f.Payload), nil
}

// replayEditPayload replaces one item's payload of the requester's own
// request before approval: a new intent, the original message id. Anyone
// else is refused by the replay rules (audited).
func (s *Server) replayEditPayload(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	dl, payload, err := payloadForm{Item: c.Param("dl"), Payload: c.FormValue("payload")}.Validate()
	if err == nil {
		err = s.deps.Replays.EditPayload(c.Request().Context(), req.ID, dl, userOf(c).Actor, payload, authz.RequestMeta(c))
	}
	if err != nil {
		return s.requestFormError(c, err, "payload")
	}
	s.flash(c, "Payload saved: this is a new intent, to be approved again.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}
