package hook

// The canonical-ABI glue for `export decide: func(request) -> result<verdict, string>`
// in wit/hook.wit. The request flattens to 26 values (over the limit of 16),
// so the host writes it into memory it allocates with cabi_realloc and passes
// one pointer; the result is returned as a pointer to a 32-byte area.
//
// Request layout (offsets in bytes): event 0; hook 4/8; tool 12/16; input
// 20/24; result: tag 28, output 32/36, is-error 40; session-id 44 (tag, then
// ptr/len at +4/+8); turn-id 56; tool-call-id 68; cwd 80; config 92.
// Result layout: tag 0 (0 ok, 1 err); err string 4/8; ok: decision tag 4,
// decision string 8/12 (deny, modify, replace, ask), replace is-error 16,
// context tag 20, context 24/28.

import (
	"fmt"
	"unsafe"
)

// pinned keeps every buffer handed to the host reachable, so Go's
// (non-moving) GC cannot free it while the host still reads or writes it.
var pinned = map[uintptr][]byte{}

// unpinAll lets the GC have every buffer handed to the host so far.
func unpinAll() { clear(pinned) }

func alloc(size, align uint32) uintptr {
	if size == 0 {
		return uintptr(align) // any non-null aligned address will do
	}
	buf := make([]byte, size+align)
	p := uintptr(unsafe.Pointer(&buf[0]))
	aligned := (p + uintptr(align) - 1) &^ (uintptr(align) - 1)
	pinned[aligned] = buf
	return aligned
}

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	p := alloc(newSize, align)
	if oldPtr != 0 && oldSize != 0 {
		n := min(oldSize, newSize)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), n),
			unsafe.Slice((*byte)(unsafe.Pointer(uintptr(oldPtr))), n))
		delete(pinned, uintptr(oldPtr))
	}
	return uint32(p)
}

func at(base uintptr, off uintptr) unsafe.Pointer { return unsafe.Pointer(base + off) }

func loadString(base, off uintptr) string {
	ptr := *(*uint32)(at(base, off))
	n := *(*uint32)(at(base, off+4))
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)) // copies
}

func loadOption(base, off uintptr) *string {
	if *(*uint8)(at(base, off)) == 0 {
		return nil
	}
	s := loadString(base, off+4)
	return &s
}

func lift(args uintptr) *Request {
	r := &Request{
		Event: Event(*(*uint8)(at(args, 0))),
		Hook:  loadString(args, 4),
		Tool:  loadString(args, 12),
		Input: loadString(args, 20),
	}
	if *(*uint8)(at(args, 28)) != 0 {
		r.Result = &ToolResult{Output: loadString(args, 32), IsError: *(*uint8)(at(args, 40)) != 0}
	}
	r.SessionID = loadOption(args, 44)
	r.TurnID = loadOption(args, 56)
	r.ToolCallID = loadOption(args, 68)
	r.Cwd = loadOption(args, 80)
	r.Config = loadOption(args, 92)
	return r
}

var retArea [8]uint32 // 32 bytes, 4-aligned

func ret() uintptr { return uintptr(unsafe.Pointer(&retArea)) }

func storeString(off uintptr, s string) {
	p := alloc(uint32(len(s)), 1)
	if len(s) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), len(s)), s)
	}
	*(*uint32)(at(ret(), off)) = uint32(p)
	*(*uint32)(at(ret(), off+4)) = uint32(len(s))
}

func call(r *Request) (v Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hook panicked: %v", p)
		}
	}()
	if registered == nil {
		return v, fmt.Errorf("no hook registered: call hook.Register from an init function")
	}
	return registered(r)
}

//go:wasmexport decide
func decide(args uint32) uint32 {
	r := lift(uintptr(args))
	unpinAll() // the request is copied out; its buffers are no longer needed
	retArea = [8]uint32{}
	v, err := call(r)
	if err != nil {
		*(*uint8)(at(ret(), 0)) = 1
		storeString(4, err.Error())
		return uint32(ret())
	}
	*(*uint8)(at(ret(), 4)) = uint8(v.kind)
	if v.kind != allow {
		storeString(8, v.text)
	}
	if v.kind == replace && v.replaceIsError {
		*(*uint8)(at(ret(), 16)) = 1
	}
	if v.context != nil {
		*(*uint8)(at(ret(), 20)) = 1
		storeString(24, *v.context)
	}
	return uint32(ret())
}

//go:wasmexport cabi_post_decide
func cabiPostDecide(uint32) { unpinAll() }
