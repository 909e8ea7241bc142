package authz

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// How pages show times (user_settings.time_zone).
const (
	TimeZoneUTC   = "utc"   // every time in UTC (the default)
	TimeZoneLocal = "local" // in the browser's zone, UTC on hover
)

// ValidTimeZone reports whether tz is one of the choices.
func ValidTimeZone(tz string) bool { return tz == TimeZoneUTC || tz == TimeZoneLocal }

const (
	selectTimeZone = `SELECT time_zone FROM user_settings WHERE issuer = $1 AND subject = $2`
	upsertTimeZone = `INSERT INTO user_settings (issuer, subject, time_zone) VALUES ($1, $2, $3)
    ON CONFLICT (issuer, subject) DO UPDATE SET time_zone = $3, updated_at = now()`
)

// TimeZoneOf returns how u chose to see times (TimeZoneUTC when they never
// chose).
func TimeZoneOf(ctx context.Context, db *pgxpool.Pool, u User) (string, error) {
	var tz string
	err := db.QueryRow(ctx, selectTimeZone, u.Issuer, u.Subject).Scan(&tz)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return TimeZoneUTC, nil
	case err != nil:
		return "", fmt.Errorf("read settings: %w", err)
	}
	return tz, nil
}

// SetTimeZone records how u wants to see times, audited (user.settings) in
// the same transaction. It returns an invalid quarantine.Error for an
// unknown choice.
func SetTimeZone(ctx context.Context, db *pgxpool.Pool, u User, tz string, meta audit.Event) error {
	if !ValidTimeZone(tz) {
		return quarantine.Errorf(quarantine.EINVALID, "show times in UTC or in your browser's zone")
	}
	// One row, then the audit chain: no lock race to lose, so no retry
	// (dlq.InTx).
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, upsertTimeZone, u.Issuer, u.Subject, tz); err != nil {
			return err
		}
		meta.Actor, meta.Action, meta.Outcome = u.Actor, audit.ActionUserSettings, audit.OutcomeOK
		meta.ObjectType, meta.ObjectID, meta.After = "user_settings", u.Subject, map[string]any{"time_zone": tz}
		_, err := audit.Append(ctx, tx, meta)
		return err
	})
	if err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	return nil
}
