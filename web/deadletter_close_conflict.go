package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// closeOneConflict answers a confirmed discard or resolve of dead letter
// id on its own route that Close refused as a conflict (why: its
// message): 409 and the confirmation page again, as a selection's is,
// saying that nothing changed and why it stands where it does now: a
// replay request holds it (named, with what frees it) or its status moved
// on, and then no button, only the way back to it; or it is still open
// but changed since the person loaded it, and then the form again, at the
// version it has now, with the reason they typed, for them to confirm
// what the page shows.
func (s *Server) closeOneConflict(c echo.Context, k closeKind, id int64, scope authz.Scope, action, back string, f closeForm, why string) error {
	keep, left, err := s.splitClosable(c, []int64{id}, scope, k.path)
	if err != nil {
		return err
	}
	fields := []views.Hidden{{Name: "return_to", Value: f.ReturnTo}}
	msg := fmt.Sprintf("Nothing changed: %s. It cannot be %s now; why is below.", why, k.done)
	if len(keep) == 1 {
		v, err := s.deps.DeadLetters.VersionOf(c.Request().Context(), id) // the version alone: the page lists it as the list does
		if err != nil {
			return err
		}
		fields = append(fields, views.Hidden{Name: "version", Value: strconv.FormatInt(int64(v), 10)})
		msg = fmt.Sprintf("Nothing changed: %s. It is as shown below now; confirm again to %s it as it is.", why, k.path)
	}
	return s.renderCloseConfirm(c, k, keep, scope, action, back, f.Reason, fields, map[string]string{"": msg}, http.StatusConflict, left)
}
