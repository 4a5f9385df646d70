module toolgate.dev/hook

go 1.24
