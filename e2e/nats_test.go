package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// natsNode is one nats-server process with JetStream on file storage. Its
// ports and store directory stay the same across Stop/Start/Kill, so a
// restarted node is the same server with the same data.
type natsNode struct {
	Name        string
	Port        int // client port
	HTTPPort    int // monitoring: /healthz, /jsz
	ClusterPort int // 0 for a single server
	StoreDir    string
	proc        *proc
}

// URL is the node's client URL.
func (n *natsNode) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// natsStopTimeout bounds a graceful nats-server stop (it flushes JetStream).
const natsStopTimeout = 30 * time.Second

// Stop stops the node gracefully (SIGTERM) and waits until it exited.
func (n *natsNode) Stop(t *testing.T) { t.Helper(); n.proc.Stop(t, natsStopTimeout) }

// Kill kills the node with SIGKILL.
func (n *natsNode) Kill(t *testing.T) { t.Helper(); n.proc.Kill(t) }

// Start starts a stopped node again on its ports and store, and waits
// until it is healthy (JetStream current).
func (n *natsNode) Start(t *testing.T) {
	t.Helper()
	n.proc.Start(t)
	n.waitHealthy(t)
}

// Restart is Stop then Start.
func (n *natsNode) Restart(t *testing.T) {
	t.Helper()
	n.Stop(t)
	n.Start(t)
}

// waitHealthy waits for /healthz to answer 200: the server accepts
// clients and, in a cluster, JetStream has a meta leader and is current.
func (n *natsNode) waitHealthy(t *testing.T) {
	t.Helper()
	wait.For(t, n.Name+" healthy", 60*time.Second, whileRunning(httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.HTTPPort)), n.proc))
}

// jsz is the part of the /jsz monitoring answer the tests read.
type jsz struct {
	Meta *struct {
		Name        string `json:"name"`
		Leader      string `json:"leader"`
		ClusterSize int    `json:"cluster_size"`
		Replicas    []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
			Offline bool   `json:"offline"`
		} `json:"replicas"`
	} `json:"meta_cluster"`
}

func (n *natsNode) jsz() (jsz, error) {
	var out jsz
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/jsz", n.HTTPPort))
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("%s /jsz: %s", n.Name, resp.Status)
	}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// natsConfig is a nats-server configuration file for one node.
func (n *natsNode) config(clusterName string, routes []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %q\n", n.Name)
	fmt.Fprintf(&b, "listen: \"127.0.0.1:%d\"\n", n.Port)
	fmt.Fprintf(&b, "http: \"127.0.0.1:%d\"\n", n.HTTPPort)
	b.WriteString("max_payload: 8MB\n")
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: 256MB\n  max_file_store: 4GB\n}\n", n.StoreDir)
	if n.ClusterPort != 0 {
		fmt.Fprintf(&b, "cluster {\n  name: %q\n  listen: \"127.0.0.1:%d\"\n  routes: [\n", clusterName, n.ClusterPort)
		for _, p := range routes {
			if p != n.ClusterPort {
				fmt.Fprintf(&b, "    \"nats-route://127.0.0.1:%d\"\n", p)
			}
		}
		b.WriteString("  ]\n}\n")
	}
	return b.String()
}

func newNATSNode(t *testing.T, name string, clustered bool) *natsNode {
	t.Helper()
	n := &natsNode{Name: name, Port: freePort(t), HTTPPort: freePort(t), StoreDir: filepath.Join(t.TempDir(), "jetstream")}
	if clustered {
		n.ClusterPort = freePort(t)
	}
	return n
}

func (n *natsNode) launch(t *testing.T, clusterName string, routes []int) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), n.Name+".conf")
	if err := os.WriteFile(conf, []byte(n.config(clusterName, routes)), 0o644); err != nil {
		t.Fatal(err)
	}
	n.proc = startProc(t, &proc{name: "nats-" + n.Name, bin: natsServerBinary(t), args: []string{"-c", conf}})
}

// startNATS starts one nats-server with JetStream (file storage in a
// temporary directory) on free loopback ports and waits until it is healthy.
func startNATS(t *testing.T) *natsNode {
	t.Helper()
	n := newNATSNode(t, "nats-single", false)
	n.launch(t, "", nil)
	n.waitHealthy(t)
	return n
}

// natsCluster is a JetStream cluster of nats-server processes on loopback.
type natsCluster struct {
	Name  string
	Nodes []*natsNode
}

// startNATSCluster starts size nodes routed to each other, each with its
// own store, and waits until every node is healthy and they agree on a
// JetStream meta leader.
func startNATSCluster(t *testing.T, size int) *natsCluster {
	t.Helper()
	c := &natsCluster{Name: "e2e"}
	var routes []int
	for i := range size {
		n := newNATSNode(t, fmt.Sprintf("n%d", i+1), true)
		c.Nodes = append(c.Nodes, n)
		routes = append(routes, n.ClusterPort)
	}
	for _, n := range c.Nodes {
		n.launch(t, c.Name, routes)
	}
	c.waitMetaLeader(t)
	return c
}

// URLs is the comma-separated client URLs of every node (NATS_URL).
func (c *natsCluster) URLs() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Node returns the node named name.
func (c *natsCluster) Node(t *testing.T, name string) *natsNode {
	t.Helper()
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no NATS node named %q", name)
	return nil
}

// waitMetaLeader waits until every running node is healthy and all of them
// name the same JetStream meta leader, with every peer current.
func (c *natsCluster) waitMetaLeader(t *testing.T) {
	t.Helper()
	var procs []*proc
	for _, n := range c.Nodes {
		procs = append(procs, n.proc)
	}
	wait.For(t, "JetStream meta leader of cluster "+c.Name, 90*time.Second, whileRunning(func() error {
		leader := ""
		for _, n := range c.Nodes {
			if err := httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.HTTPPort))(); err != nil {
				return err
			}
			j, err := n.jsz()
			if err != nil {
				return err
			}
			if j.Meta == nil || j.Meta.Leader == "" {
				return fmt.Errorf("%s knows no meta leader yet", n.Name)
			}
			if leader != "" && j.Meta.Leader != leader {
				return fmt.Errorf("nodes disagree on the meta leader: %s and %s", leader, j.Meta.Leader)
			}
			leader = j.Meta.Leader
			if j.Meta.Leader == n.Name {
				for _, r := range j.Meta.Replicas {
					if !r.Current || r.Offline {
						return fmt.Errorf("meta peer %s not current", r.Name)
					}
				}
				if len(j.Meta.Replicas) != len(c.Nodes)-1 {
					return fmt.Errorf("meta leader %s sees %d peers, want %d", n.Name, len(j.Meta.Replicas), len(c.Nodes)-1)
				}
			}
		}
		return nil
	}, procs...))
}
