package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/quarantine-console/quarantine/audit"
)

// runAuditKeygen is "console audit keygen --out FILE": FILE gets the private
// key (mode 0600), FILE.pub the public key to keep with whoever verifies.
// Neither is ever overwritten, and a refused or failed keygen leaves
// nothing behind: a new private key beside another key's public half,
// under the pair's names, would sign checkpoints nobody can verify.
func runAuditKeygen(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var out string
	s := newSettings("audit keygen", getenv, stderr)
	s.str(&out, "out", "AUDIT_SIGNING_KEY_FILE", "", "where to write the private key; the public key goes to the same name plus .pub (neither may exist)", checkRequired)
	if err := s.parse(args); err != nil {
		return err
	}
	priv, pub, id, err := audit.GenerateKey()
	if err != nil {
		return err
	}
	if err := writeKeyPair(out, priv, pub); err != nil {
		return fmt.Errorf("audit keygen: %w", err)
	}
	fmt.Fprintf(stdout, "audit signing key %s written to %s (public key: %s.pub)\n", id, out, out)
	return nil
}

// writeKeyPair writes priv to path and pub to path.pub, both or neither.
// Both files are created exclusively before either is written, so an
// existing one (a rotation that kept the old key's public half under this
// name) refuses the pair; a file it created is removed again when a later
// step fails.
func writeKeyPair(path string, priv, pub []byte) (err error) {
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{{path, priv, 0o600}, {path + ".pub", pub, 0o644}}
	var created []*os.File
	defer func() {
		if err == nil {
			return
		}
		for _, f := range created {
			// Close errors are moot for a file being removed; a failed
			// removal is said, so nobody deploys half a pair.
			_ = f.Close()
			if rmErr := os.Remove(f.Name()); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("remove the half-written %s: %w", f.Name(), rmErr))
			}
		}
	}()
	for _, f := range files {
		fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: keygen never overwrites a key, and writes neither file of the pair when one exists (give --out a new name)", f.path)
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", f.path, err)
		}
		created = append(created, fh)
	}
	for i, fh := range created {
		if _, err := fh.Write(files[i].data); err != nil {
			return fmt.Errorf("write %s: %w", fh.Name(), err)
		}
		if err := fh.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", fh.Name(), err)
		}
	}
	for _, fh := range created {
		if err := fh.Close(); err != nil {
			return fmt.Errorf("write %s: %w", fh.Name(), err)
		}
	}
	return nil
}
