package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/cutover/cutover/internal/wire"
)

func init() {
	register("decode", "read one msgpack value (routing document, migration event, export page) on stdin, write it as JSON", runDecode)
}

// stdin is where `cutover decode` reads (tests replace it).
var stdin io.Reader = os.Stdin

// maxDecodeInput bounds what `cutover decode` reads: a routing document or
// an event is a few KB, a page at most a few MB (events.MaxEncodedSize).
const maxDecodeInput = 16 << 20

// runDecode is `cutover decode routing|event|page`: natscli's translate
// filter (`nats kv watch ROUTING --translate 'cutover decode routing'`)
// runs it once per message with the value on stdin (docs/wire-format.md).
func runDecode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("decode", "decode routing|event|page < value.msgpack\n\nReads ONE msgpack value on stdin and writes its JSON form (docs/wire-format.md) on one line:\na ROUTING value, a MIGRATION_EVENTS or MIGRATION_CMDS message, or a PAGES message, in one\nvocabulary (snake_case names, RFC 3339 times, enums by name; docs/schema/*.decoded.schema.json).\nLock tokens are shown redacted. As natscli's translate filter:\n\n  nats sub '$KV.ROUTING.>' --translate 'cutover decode routing'\n  nats sub 'cutover.evt.>' --all --translate 'cutover decode event'\n  nats sub 'cutover.pages.>' --all --translate 'cutover decode page'", stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || !slices.Contains(wire.Kinds, fs.Arg(0)) {
		return fmt.Errorf("%w: want one of %s", errUsage, strings.Join(wire.Kinds, ", "))
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxDecodeInput+1))
	if err != nil {
		return err
	}
	if len(b) > maxDecodeInput {
		return fmt.Errorf("input over %d bytes", maxDecodeInput)
	}
	if len(b) == 0 {
		// natscli calls the filter for deletes and purges too (no value).
		fmt.Fprintln(stdout, "null")
		return nil
	}
	out, err := wire.Decode(fs.Arg(0), b)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}
