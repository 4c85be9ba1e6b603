package main

// The examples of each command's help (cobra's Example: --help prints them
// under "Examples:", and the man pages under EXAMPLE). TestHelpExamples
// parses every line with the real command line parser, so an example
// cannot name a flag that is gone. SRC is a PostgreSQL URL, DST a target.

const migrateExamples = `  denorm migrate --mapping shop.yaml --source "$SRC" --target mongodb://host:27017/shop --job shop
  denorm migrate --mapping shop.yaml --source "$SRC" --target ./out     # a directory: out/<collection>.jsonl
  denorm migrate --mapping shop.yaml --source "$SRC" --target "$DST" --job shop --resume`

const validateExamples = `  denorm validate --mapping shop.yaml                                  # structure and meaning
  denorm validate --mapping shop.yaml --source "$SRC"                  # and the live catalog
  denorm validate --mapping shop.yaml --source "$SRC" --target "$DST"  # and what the target can store`

const planExamples = `  denorm plan --mapping shop.yaml --source "$SRC"
  denorm plan --mapping shop.yaml --source "$SRC" --format html -o plan.html
  denorm plan --mapping shop.yaml --source "$SRC" --format json -o plan.json --fail-on error`

const adviseExamples = `  denorm advise --source "$SRC" -o shop.yaml
  denorm advise --source "$SRC" --schema sales --numeric double -o sales.yaml --report advise.md`

const statusExamples = `  denorm status --target "$DST"
  denorm status --target "$DST" --source "$SRC" --job shop --format json`

const verifyExamples = `  denorm verify --mapping shop.yaml --source "$SRC" --target "$DST"
  denorm verify --mapping shop.yaml --source "$SRC" --target "$DST" --oracle sql --report verify.json
  denorm verify --mapping shop.yaml --source "$SRC" --target "$DST" --job shop --sample 10`

const syncExamples = `  denorm sync --mapping shop.yaml --source "$SRC" --target "$DST" --job shop --method diff --once
  denorm sync --mapping shop.yaml --source "$SRC" --target "$DST" --job shop --method diff --every 5m
  denorm sync --mapping shop.yaml --source "$SRC" --target "$DST" --job live --method logical --follow --metrics-addr :9464`

const versionExamples = `  denorm version      # version, commit, build date, Go, platform, mapping format
  denorm --version    # the same`
