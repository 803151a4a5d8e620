// Command envsnap records snapshots of the process environment in a local
// SQLite database and shows what changed between two of them.
//
//	envsnap save [name]      record the current environment
//	envsnap list             list saved snapshots
//	envsnap diff <a> [b]     compare snapshot a with b (default: now)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ashgrove/envsnap/internal/envdiff"
	"github.com/ashgrove/envsnap/internal/store"
)

var version = "dev"

func usage() {
	fmt.Fprintf(os.Stderr, "usage: envsnap [-db path] save|list|diff|completion|version ...\n")
	flag.PrintDefaults()
	os.Exit(2)
}

func defaultDB() string {
	if dir, err := os.UserConfigDir(); err == nil {
		return filepath.Join(dir, "envsnap", "snapshots.db")
	}
	return "envsnap.db"
}

func main() {
	dbPath := flag.String("db", defaultDB(), "snapshot database `path`")
	flag.Usage = usage
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		usage()
	}

	switch args[0] {
	case "version":
		fmt.Println("envsnap", version)
		return
	case "completion":
		if len(args) != 2 {
			usage()
		}
		fmt.Print(completion(args[1]))
		return
	}

	st, err := store.Open(*dbPath)
	if err != nil {
		fatal(err)
	}
	defer st.Close()

	switch args[0] {
	case "save":
		name := time.Now().Format("2006-01-02T15:04:05")
		if len(args) > 1 {
			name = args[1]
		}
		if err := st.Save(name, os.Environ()); err != nil {
			fatal(err)
		}
		fmt.Println("saved", name)
	case "list":
		snaps, err := st.List()
		if err != nil {
			fatal(err)
		}
		for _, s := range snaps {
			fmt.Printf("%-24s %3d vars  %s\n", s.Name, s.Count, s.Taken.Format(time.RFC3339))
		}
	case "diff":
		if len(args) < 2 {
			usage()
		}
		a, err := st.Load(args[1])
		if err != nil {
			fatal(err)
		}
		b := os.Environ()
		if len(args) > 2 {
			if b, err = st.Load(args[2]); err != nil {
				fatal(err)
			}
		}
		for _, c := range envdiff.Compare(a, b) {
			fmt.Println(c)
		}
	default:
		usage()
	}
}

func completion(shell string) string {
	switch shell {
	case "bash":
		return "complete -W \"save list diff completion version\" envsnap\n"
	case "zsh":
		return "#compdef envsnap\n_arguments '1: :(save list diff completion version)'\n"
	}
	fatal(fmt.Errorf("unsupported shell %q", shell))
	return ""
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "envsnap:", err)
	os.Exit(1)
}
