module example.local/go-path-guard

go 1.24

require toolgate.dev/hook v0.0.0

replace toolgate.dev/hook => ../../../sdk/go
