package load

import "testing"

// TestServerProfiles checks that buildInfo picks the profile, that the
// profile names the server as Caps.Server does, that Caps comes from it,
// and that every known profile is filled in.
func TestServerProfiles(t *testing.T) {
	for _, c := range []struct {
		info    serverInfo
		profile *serverProfile
		server  string
	}{
		{serverInfo{Version: "7.0.14", FerretDB: "v1.24.0"}, &ferretDB, "FerretDB v1.24.0"},
		{serverInfo{Version: "7.0.42", FerretDB: "unknown"}, &ferretDB, "FerretDB"},
		{serverInfo{Version: "7.0.14"}, &mongoDB, "MongoDB 7.0.14"},
		{serverInfo{}, &mongoDB, "MongoDB"},
	} {
		p := profileOf(c.info)
		if p != c.profile {
			t.Errorf("%+v: profile %s, want %s", c.info, p.name, c.profile.name)
		}
		if got := p.describe(c.info); got != c.server {
			t.Errorf("%+v: server %q, want %q", c.info, got, c.server)
		}
	}
	if got, want := ferretDB.caps("FerretDB"), (Caps{Parallel: true, Delete: true, NoDecimal128: true, NoQuoteInNames: true, EmptyFirst: true, Server: "FerretDB"}); got != want {
		t.Errorf("FerretDB caps %+v, want %+v", got, want)
	}
	if got, want := mongoDB.caps("MongoDB"), (Caps{Parallel: true, Delete: true, Server: "MongoDB"}); got != want {
		t.Errorf("MongoDB caps %+v, want %+v", got, want)
	}
	if last := profiles[len(profiles)-1]; !last.is(serverInfo{}) {
		t.Errorf("the last profile, %s, does not take any server", last.name)
	}
	for _, p := range profiles {
		if p.name == "" || p.is == nil || p.version == nil || p.rewrite == nil || p.noSharding == "" || len(p.unsupportedIndex) == 0 {
			t.Errorf("profile %q is not filled in: %+v", p.name, *p)
		}
	}
}
