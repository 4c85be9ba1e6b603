package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/transform"
)

// Some servers close the connection on a document they cannot take
// rather than answering with a write error: FerretDB 1.24 does for a
// double NaN anywhere in a document. Retrying the batch cannot help (the
// same document closes the connection again), and taking the closed
// connection for an outage would retry it for the whole retry period and
// then fail the run. So when a write's connection is closed while the
// server still answers a ping, the batch is split in halves and each
// written again, down to the document the server will not take, which is
// rejected like any refused document; an unreachable server is an outage
// (the error goes back to the retrying caller).

// pingTimeout bounds the ping that tells a refused batch from an outage.
const pingTimeout = 5 * time.Second

// refusedBatch reports whether err is the server closing the connection
// of a write while it still answers a ping: the batch's content, not the
// network.
func (s *serverTarget) refusedBatch(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || !connectionClosed(err) {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return s.client.Ping(pctx, nil) == nil
}

func connectionClosed(err error) bool {
	return mongo.IsNetworkError(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection closed unexpectedly")
}

// isolate writes docs, whose batch made the server close the connection,
// in halves: a single document it still will not take is rejected.
func (s *serverTarget) isolate(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error) {
	if len(docs) == 1 {
		d := docs[0]
		return []transform.Reject{{Collection: collection, ID: d.ID, Source: d.Source,
			Err: errors.New("the target closed the connection on this document instead of storing it (FerretDB does for a NaN double): filter the row or compute the field with sql:")}}, nil
	}
	mid := len(docs) / 2
	var out []transform.Reject
	for _, half := range [][]transform.Document{docs[:mid], docs[mid:]} {
		rejects, err := s.Write(ctx, collection, half)
		out = append(out, rejects...)
		if err != nil {
			return out, fmt.Errorf("write %d documents to %q: %w", len(half), collection, err)
		}
	}
	return out, nil
}
