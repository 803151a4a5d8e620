// Package store keeps environment snapshots in SQLite.
package store

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

const schema = `
CREATE TABLE IF NOT EXISTS snapshots (
	id    INTEGER PRIMARY KEY,
	name  TEXT NOT NULL UNIQUE,
	taken TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS vars (
	snapshot_id INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
	entry       TEXT NOT NULL
);`

// Store is an open snapshot database.
type Store struct{ db *sql.DB }

// Snapshot describes one saved environment.
type Snapshot struct {
	Name  string
	Taken time.Time
	Count int
}

// Open opens (creating if needed) the database at path.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite3", path+"?_foreign_keys=on")
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("init schema: %w", err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Save records env under name, replacing an existing snapshot of that name.
func (s *Store) Save(name string, env []string) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM snapshots WHERE name = ?`, name); err != nil {
		return err
	}
	res, err := tx.Exec(`INSERT INTO snapshots (name, taken) VALUES (?, ?)`, name, time.Now())
	if err != nil {
		return err
	}
	id, _ := res.LastInsertId()
	for _, e := range env {
		if _, err := tx.Exec(`INSERT INTO vars (snapshot_id, entry) VALUES (?, ?)`, id, e); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Load returns the entries of the named snapshot.
func (s *Store) Load(name string) ([]string, error) {
	rows, err := s.db.Query(`SELECT v.entry FROM vars v JOIN snapshots s ON s.id = v.snapshot_id WHERE s.name = ?`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var env []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			return nil, err
		}
		env = append(env, e)
	}
	if len(env) == 0 {
		return nil, fmt.Errorf("no snapshot named %q", name)
	}
	return env, rows.Err()
}

// List returns all snapshots, newest first.
func (s *Store) List() ([]Snapshot, error) {
	rows, err := s.db.Query(`SELECT s.name, s.taken, COUNT(v.entry) FROM snapshots s
		LEFT JOIN vars v ON v.snapshot_id = s.id GROUP BY s.id ORDER BY s.taken DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Snapshot
	for rows.Next() {
		var sn Snapshot
		if err := rows.Scan(&sn.Name, &sn.Taken, &sn.Count); err != nil {
			return nil, err
		}
		out = append(out, sn)
	}
	return out, rows.Err()
}
