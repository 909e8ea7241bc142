package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sort"
)

// KeyID names a public key: the first 16 hex digits of its SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Signer signs checkpoints with one Ed25519 private key.
type Signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	id   string
}

// NewSigner returns a signer for priv.
func NewSigner(priv ed25519.PrivateKey) *Signer {
	pub := priv.Public().(ed25519.PublicKey)
	return &Signer{priv: priv, pub: pub, id: KeyID(pub)}
}

// KeyID returns the id of the signer's public key.
func (s *Signer) KeyID() string { return s.id }

// PublicKey returns the signer's public key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

func (s *Signer) sign(c *Checkpoint) {
	c.KeyID, c.PublicKey = s.id, s.pub
	c.Signature = ed25519.Sign(s.priv, c.signedBytes())
}

// LoadSigner reads an Ed25519 private key from a PEM file ("PRIVATE KEY",
// PKCS #8: what GenerateKey and `openssl genpkey -algorithm ed25519` write).
func LoadSigner(path string) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read audit signing key: %w", err)
	}
	priv, _, err := parseKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("audit signing key %s: %w", path, err)
	}
	if priv == nil {
		return nil, fmt.Errorf("audit signing key %s: holds a public key; give the private key", path)
	}
	return NewSigner(priv), nil
}

// parseKeyPEM reads the first PEM block of b: an Ed25519 private key (PKCS
// #8) or public key (PKIX). priv is nil for a public key.
func parseKeyPEM(b []byte) (priv ed25519.PrivateKey, pub ed25519.PublicKey, err error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, nil, errors.New("not a PEM file")
	}
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("parse private key: %w", err)
		}
		p, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, nil, fmt.Errorf("the private key is a %T, not Ed25519", k)
		}
		return p, p.Public().(ed25519.PublicKey), nil
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("parse public key: %w", err)
		}
		p, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, nil, fmt.Errorf("the public key is a %T, not Ed25519", k)
		}
		return nil, p, nil
	}
	return nil, nil, fmt.Errorf("PEM block %q is not a PRIVATE KEY or PUBLIC KEY", block.Type)
}

// GenerateKey makes a new Ed25519 key pair and returns the private key as
// PEM (PKCS #8), the public key as PEM (PKIX), and the key id.
func GenerateKey() (privPEM, pubPEM []byte, id string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, "", fmt.Errorf("generate key: %w", err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, "", fmt.Errorf("encode private key: %w", err)
	}
	pk, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, "", fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}), KeyID(pub), nil
}

// PublicKeyPEM returns pub as PEM (PKIX).
func PublicKeyPEM(pub ed25519.PublicKey) ([]byte, error) {
	pk, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}), nil
}

// KeySet is the public keys a verifier trusts, by key id. Keep them outside
// the database: a key read from the table being checked proves nothing.
type KeySet struct {
	byID map[string]ed25519.PublicKey
}

// NewKeySet returns a set of keys.
func NewKeySet(keys ...ed25519.PublicKey) *KeySet {
	ks := &KeySet{byID: map[string]ed25519.PublicKey{}}
	for _, k := range keys {
		ks.byID[KeyID(k)] = k
	}
	return ks
}

// LoadKeySet reads one key from each PEM file: a public key, or a private
// key whose public half is used.
func LoadKeySet(paths ...string) (*KeySet, error) {
	ks := NewKeySet()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read public key: %w", err)
		}
		_, pub, err := parseKeyPEM(b)
		if err != nil {
			return nil, fmt.Errorf("public key %s: %w", p, err)
		}
		ks.byID[KeyID(pub)] = pub
	}
	return ks, nil
}

// Len returns how many keys the set holds.
func (ks *KeySet) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.byID)
}

// IDs returns the key ids, sorted.
func (ks *KeySet) IDs() []string {
	if ks == nil {
		return nil
	}
	out := make([]string, 0, len(ks.byID))
	for id := range ks.byID {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Key returns the key of id, nil when the set has none.
func (ks *KeySet) Key(id string) ed25519.PublicKey {
	if ks == nil {
		return nil
	}
	return ks.byID[id]
}

// TrustedKeys is the set a console trusts a checkpoint's signature
// with: the public half of the key it signs with and others, the public
// keys of AUDIT_PUBLIC_KEYS (earlier keys, and during a rotation the next
// one, which replicas already switched sign with; docs/access.md). The
// one way to build it: the checkpointer (Record, its schedule), the
// unverified-checkpoint count, the audit page's chain check and
// "console audit verify" trust the same keys. others may be nil.
func TrustedKeys(signer *Signer, others *KeySet) *KeySet {
	return others.With(signer.PublicKey())
}

// With returns a set of ks's keys and keys (ks may be nil).
func (ks *KeySet) With(keys ...ed25519.PublicKey) *KeySet {
	out := NewKeySet(keys...)
	if ks != nil {
		for id, k := range ks.byID {
			out.byID[id] = k
		}
	}
	return out
}
