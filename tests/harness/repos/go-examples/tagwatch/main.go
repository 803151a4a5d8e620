// Copyright 2024 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Tagwatch is a web server that reports whether a given Go release has
// appeared in the official download feed yet.
//
// It polls the feed in the background and serves a one-line answer at /,
// plus its counters at /debug/vars.
package main

import (
	"encoding/json"
	"expvar"
	"flag"
	"html/template"
	"log"
	"net/http"
	"sync"
	"time"
)

var (
	httpAddr = flag.String("http", "localhost:8080", "listen `address`")
	feedURL  = flag.String("feed", "https://go.dev/dl/?mode=json&include=all", "download feed `URL`")
	version  = flag.String("version", "go1.24.0", "release to wait for")
	interval = flag.Duration("poll", 30*time.Second, "poll `interval`")
)

var (
	hits       = expvar.NewInt("hits")
	polls      = expvar.NewInt("polls")
	lastError  = expvar.NewString("lastError")
	errorCount = expvar.NewInt("errors")
)

func main() {
	flag.Parse()
	http.Handle("/", NewServer(*feedURL, *version, *interval))
	log.Printf("serving on http://%s", *httpAddr)
	log.Fatal(http.ListenAndServe(*httpAddr, nil))
}

// Server answers whether the release has shipped. It is an http.Handler.
type Server struct {
	feed    string
	version string
	every   time.Duration

	mu      sync.RWMutex
	shipped bool
	checked time.Time
}

// NewServer starts polling feed for version and returns the handler.
func NewServer(feed, version string, every time.Duration) *Server {
	s := &Server{feed: feed, version: version, every: every}
	go s.poll()
	return s
}

// Hooks replaced by tests.
var (
	sleep    = time.Sleep
	donePoll = func() {}
)

func (s *Server) poll() {
	for {
		found := released(s.feed, s.version)
		s.mu.Lock()
		s.shipped, s.checked = found, time.Now()
		s.mu.Unlock()
		if found {
			donePoll()
			return
		}
		sleep(s.every)
	}
}

// released fetches the feed and reports whether version is listed in it.
func released(feed, version string) bool {
	polls.Add(1)
	resp, err := http.Get(feed)
	if err != nil {
		recordErr(err)
		return false
	}
	defer resp.Body.Close()

	var releases []struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&releases); err != nil {
		recordErr(err)
		return false
	}
	for _, r := range releases {
		if r.Version == version {
			return true
		}
	}
	return false
}

func recordErr(err error) {
	log.Print(err)
	lastError.Set(err.Error())
	errorCount.Add(1)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hits.Add(1)
	s.mu.RLock()
	data := struct {
		Version string
		Shipped bool
		Checked time.Time
	}{s.version, s.shipped, s.checked}
	s.mu.RUnlock()
	if err := page.Execute(w, data); err != nil {
		log.Print(err)
	}
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html><body style="font-family: sans-serif; text-align: center">
<h2>Is {{.Version}} out?</h2>
<h1>{{if .Shipped}}Yes!{{else}}Not yet.{{end}}</h1>
{{if not .Checked.IsZero}}<p>last checked {{.Checked.Format "15:04:05"}}</p>{{end}}
</body></html>
`))
