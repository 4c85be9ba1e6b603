package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError is the usage error of a command line whose flags could not
// be read. An unknown flag that mongoimport, mongorestore, pgloader,
// gh-ost or Relational Migrator users type gets a pointer to denorm's way
// of saying it; another unknown flag gets the command's nearest flags
// (did you mean).
func flagError(cmd *cobra.Command, err error) error {
	name, ok := unknownFlag(err.Error())
	if !ok {
		return usageError{err}
	}
	if hint, ok := anchorFlags[normalFlag(name)]; ok && cmd.Flags().Lookup(name) == nil {
		// A pointer to a flag this command lacks says whose it is.
		if m := flagRef.FindStringSubmatch(hint); m != nil && cmd.Flags().Lookup(m[1]) == nil {
			hint += fmt.Sprintf(" ('denorm %s' has no --%s: it is migrate's)", cmd.Name(), m[1])
		}
		return usageError{fmt.Errorf("%w: %s", err, hint)}
	}
	if s := nearFlags(cmd, name); len(s) > 0 {
		return usageError{fmt.Errorf("%w; did you mean %s?", err, strings.Join(s, " or "))}
	}
	return usageError{err}
}

// unknownFlag is the name of the unknown flag pflag's error message
// names: "unknown flag: --name", "unknown shorthand flag: 'x' in -x".
func unknownFlag(msg string) (string, bool) {
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		return name, name != ""
	}
	if rest, ok := strings.CutPrefix(msg, "unknown shorthand flag: '"); ok && len(rest) > 1 && rest[1] == '\'' {
		return rest[:1], true
	}
	return "", false
}

// normalFlag is a flag's name in lower case without '-' and '_':
// --dryRun, --dry-run and --dry_run are one.
func normalFlag(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == '_':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, name)
}

// anchorFlags point the flags of the tools denorm's users know (by
// normalFlag) to denorm's way of saying the same.
var anchorFlags = map[string]string{}

func init() {
	for names, hint := range map[string]string{
		// mongoimport, mongorestore
		"uri":       "denorm takes the target as --target mongodb://host:port/db (and the source as --source postgres://...)",
		"host port": "denorm takes the target as one URI: --target mongodb://host:port/db",
		"db d":      "the database is the target URI's path: --target mongodb://host:port/db",
		"collection c nsInclude nsExclude nsFrom nsTo":                                                 "the collections are the mapping's (name:); --collections a,b runs some of them",
		"file type jsonArray headerline fields fieldFile columnsHaveTypes parseGrace archive gzip dir": "denorm reads no input file: the mapping (--mapping FILE) says which tables become which documents; --target DIR writes <collection>.jsonl files mongoimport reads",
		"mode":         "denorm always upserts by _id: a document whose _id exists is replaced, a new one inserted (merge and delete modes have no equivalent)",
		"upsertFields": "_id comes from the source row's key (the mapping's id:), and documents are replaced by _id",
		"numInsertionWorkers numInsertionWorkersPerCollection numParallelCollections": "use --workers N (each table read and written as N parts in parallel)",
		"dryRun":       "use 'denorm plan': the documents, their sizes and indexes, nothing written",
		"stopOnError":  "use --max-rejects 1 (stop at the first rejected row, the checkpoint saved)",
		"writeConcern": "give w= and journal= in the target URI (mongodb://host/db?w=majority)",
		"username u password p authenticationDatabase":      "credentials go in the URIs (mongodb://user:pass@host/db?authSource=admin); the source's also in PGUSER, PGPASSWORD or ~/.pgpass",
		"ssl tls sslCAFile tlsCAFile tlsCertificateKeyFile": "TLS goes in the URIs: ?tls=true&tlsCAFile=... for the target, ?sslmode=verify-full for the source",
		"noIndexRestore":         "use --indexes none",
		"maintainInsertionOrder": "writes replace documents by _id, in any order: the order cannot change the result",
		"drop":                   "only 'denorm migrate --drop' drops the mapping's collections (before loading)",
		"ignoreBlanks":           "NULL columns are always left out of the documents",
		// pgloader
		"onErrorStop": "use --max-rejects 1 (stop at the first rejected row, the checkpoint saved)",
		"summary":     "use --summary-file FILE (the end-of-run summary as JSON)",
		"logfile":     "messages go to stderr; --log-format json writes them as one JSON object a line",
		"cast":        "types convert as the type table says; the mapping's numeric:, timestamp: or a sql: field change it (see 'denorm validate')",
		// gh-ost, Relational Migrator
		"execute":              "denorm migrate writes; 'denorm plan' is the dry run",
		"chunkSize":            "use --batch-size N",
		"maxErrors errorLimit": "use --max-rejects N",
	} {
		for _, n := range strings.Fields(names) {
			anchorFlags[normalFlag(n)] = hint
		}
	}
}

// flagRef is a denorm flag a hint names, after "use".
var flagRef = regexp.MustCompile(`^use --([a-z-]+)`)

// nearFlags are the command's flags nearest to name: the same but for
// case, '-' and '_', or within an edit distance of a third of the name
// (2 at least), or starting with it; the nearest first, 3 at most.
func nearFlags(cmd *cobra.Command, name string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		d := editDistance(strings.ToLower(name), strings.ToLower(f.Name))
		switch {
		case normalFlag(f.Name) == normalFlag(name) || (len(name) == 1 && f.Shorthand == name):
			d = 0
		case len(name) >= 3 && strings.HasPrefix(f.Name, name):
			d = min(d, 1)
		case d > max(2, len(name)/3):
			return
		}
		cs = append(cs, cand{f.Name, d})
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	slices.SortFunc(cs, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for _, c := range cs {
		if len(out) == 3 || (len(out) > 0 && c.d > cs[0].d) {
			break
		}
		out = append(out, "--"+c.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
