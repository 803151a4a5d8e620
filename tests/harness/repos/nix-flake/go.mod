module github.com/ashgrove/envsnap

go 1.24

require github.com/mattn/go-sqlite3 v1.14.28
