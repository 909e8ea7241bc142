package app

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// connectNATS connects to the configured servers, or starts the embedded
// one when none is configured and connects to it.
func (a *App) connectNATS() error {
	a.natsURL = a.cfg.NATSURL
	if a.natsURL == "" {
		host, portStr, _ := net.SplitHostPort(a.cfg.NATSEmbeddedAddr) // validated
		port, _ := strconv.Atoi(portStr)
		if err := os.MkdirAll(a.cfg.NATSEmbeddedDir, 0o750); err != nil {
			return fmt.Errorf("NATS_EMBEDDED_DIR: %w", err)
		}
		ns, err := server.NewServer(&server.Options{
			ServerName: "quarantine-embedded", Host: host, Port: port, JetStream: true,
			StoreDir: a.cfg.NATSEmbeddedDir, NoSigs: true, MaxPayload: 8 << 20,
		})
		if err != nil {
			return fmt.Errorf("embedded NATS: %w", err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			ns.Shutdown()
			return fmt.Errorf("embedded NATS did not start on %s (NATS_EMBEDDED_ADDR)", a.cfg.NATSEmbeddedAddr)
		}
		a.embedded = ns
		a.natsURL = ns.ClientURL()
		a.log.Info("started embedded NATS", "url", a.natsURL, "store", a.cfg.NATSEmbeddedDir)
	}
	nc, err := nats.Connect(a.natsURL,
		nats.Name("quarantine-console"),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { a.log.Warn("NATS disconnected", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { a.log.Info("NATS reconnected", "url", c.ConnectedUrl()) }),
	)
	if err != nil {
		return fmt.Errorf("NATS_URL %s: %w", a.natsURL, err)
	}
	a.NATS = nc
	if a.JetStream, err = jetstream.New(nc); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// DialNATS connects to url as name, reconnecting forever, with JetStream.
func DialNATS(url, name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, fmt.Errorf("NATS_URL %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}
