package quarantine

import (
	"errors"
	"fmt"
)

// Error codes: what kind of failure an Error is, from the caller's point of
// view. The web layer maps each to one HTTP status (web/render.go).
const (
	ENOTFOUND     = "not_found"    // there is no such thing, or it is not the caller's to see
	ECONFLICT     = "conflict"     // the state changed: someone else got there first, or it is not open any more
	EINVALID      = "invalid"      // the input breaks a rule; the message says which
	EFORBIDDEN    = "forbidden"    // the caller is known but may not do this
	EUNAUTHORIZED = "unauthorized" // the caller is not signed in
	EINTERNAL     = "internal"     // anything else: a bug or an outage, never explained to the caller
)

// Error is a failure the console can explain: a code saying what kind it
// is and a message written for the person who caused it. Wrap it with the
// operation for the logs (fmt.Errorf("approve replay %d: %w", id, err));
// ErrorCode and ErrorMessage find it through any wrapping.
type Error struct {
	Code    string
	Message string
}

// Error returns "code: message".
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an Error with code and a message formatted like
// fmt.Sprintf.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first Error in err's chain: "" for a
// nil err and EINTERNAL when the chain holds no Error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := find(err); ok {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first Error in err's chain, for
// the person who caused it; an error without one (an internal failure) gets
// a sentence that gives nothing away.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := find(err); ok {
		return e.Message
	}
	return "Internal error."
}

func find(err error) (*Error, bool) {
	var e *Error
	return e, errors.As(err, &e)
}
