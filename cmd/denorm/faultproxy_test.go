package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// faultProxy is a TCP proxy on loopback, in this process (toxiproxy's Go
// packages, no external process), between denorm and one server. Toxics
// added to it disturb the connections: latency, bandwidth, a cut after N
// bytes, a connection that stops passing data (timeout).
type faultProxy struct {
	t     *testing.T
	proxy *toxiproxy.Proxy
}

func init() {
	zerolog.SetGlobalLevel(zerolog.Disabled)
	toxics.Register(cutOnceType, new(cutOnceToxic))
}

// newFaultProxy starts a proxy to upstream (host:port).
func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, strings.ReplaceAll(t.Name(), "/", "_")+"_"+upstream, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("start proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &faultProxy{t: t, proxy: p}
}

// addr is where the proxy listens.
func (f *faultProxy) addr() string { return f.proxy.Listen }

// via returns the URL u with its host:port replaced by the proxy's.
func (f *faultProxy) via(u string) string {
	f.t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		f.t.Fatal(err)
	}
	p.Host = f.addr()
	return p.String()
}

// add adds a toxic; stream is "downstream" (server to denorm) or
// "upstream". It returns the toxic's name, for remove.
func (f *faultProxy) add(name, kind, stream string, attrs map[string]any) string {
	f.t.Helper()
	body := map[string]any{"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attrs}
	var b strings.Builder
	if err := jsonEncode(&b, body); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.proxy.Toxics.AddToxicJson(strings.NewReader(b.String())); err != nil {
		f.t.Fatalf("add toxic %s: %v", name, err)
	}
	return name
}

// remove removes a toxic (a timeout toxic closes the connections it held).
func (f *faultProxy) remove(name string) {
	f.t.Helper()
	if err := f.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
		f.t.Fatalf("remove toxic %s: %v", name, err)
	}
}

// cutOnceType is a toxic made for these tests: the first connection whose
// data in the toxic's direction reaches Bytes is disturbed right there
// (the bytes before pass): cut (closed), or with Stall, half-open: nothing
// more passes in that direction and the connection is never closed by the
// proxy. Every other connection, and that one's successors, pass
// untouched. The fault is aimed at a byte of the stream, not at a moment,
// so where it lands does not depend on timing.
const cutOnceType = "denorm_cut_once"

type cutOnceToxic struct {
	Bytes int64  `json:"bytes"`
	ID    string `json:"id"`
	Stall bool   `json:"stall"`
}

// faults are the cut-once toxics' shared states by ID: toxiproxy builds a
// toxic from JSON, so state shared between connections lives here.
var faults sync.Map // string -> *fault

// fault is what a cut-once toxic did.
type fault struct {
	fired atomic.Bool
}

// faultOf returns the state of the cut-once toxic id (made on first use).
func faultOf(id string) *fault {
	s, _ := faults.LoadOrStore(id, &fault{})
	return s.(*fault)
}

// cutOnce adds a cut-once toxic and returns its state.
func (f *faultProxy) cutOnce(stream string, bytes int64, stall bool) *fault {
	f.t.Helper()
	id := fmt.Sprintf("%s/%s/%d/%v", f.t.Name(), stream, bytes, stall)
	f.add(id, cutOnceType, stream, map[string]any{"bytes": bytes, "id": id, "stall": stall})
	return faultOf(id)
}

type cutLink struct {
	seen    int64
	stalled bool // this link is the half-open one: its data is dropped
}

func (t *cutOnceToxic) NewState() any { return new(cutLink) }

func (t *cutOnceToxic) Pipe(stub *toxics.ToxicStub) {
	st := faultOf(t.ID)
	link := stub.State.(*cutLink)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			switch {
			case c == nil: // the client closed its end
				stub.Close()
				return
			case link.stalled:
				continue
			case st.fired.Load() || link.seen+int64(len(c.Data)) < t.Bytes || !st.fired.CompareAndSwap(false, true):
				link.seen += int64(len(c.Data))
				stub.Output <- c
				continue
			}
			if n := t.Bytes - link.seen; n > 0 {
				stub.Output <- &stream.StreamChunk{Data: c.Data[:n], Timestamp: c.Timestamp}
			}
			if !t.Stall {
				stub.Close()
				return
			}
			link.stalled = true
		}
	}
}

func jsonEncode(w *strings.Builder, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Write(b)
	return nil
}
