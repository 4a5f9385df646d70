module example.local/{{name}}

go 1.24

require toolgate.dev/hook v0.0.0

replace toolgate.dev/hook => ../toolgate/go
