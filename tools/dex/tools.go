//go:build tools

// Package tools pins the Dex OIDC identity provider used for local runs and
// tests. It is a separate module so that Dex's dependencies never enter the
// console's go.mod. Build it with scripts/dex.sh build.
package tools

import _ "github.com/dexidp/dex/cmd/dex"
