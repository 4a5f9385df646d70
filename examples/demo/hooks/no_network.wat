;; A sandboxed guard written directly in WebAssembly text: toolgate embeds its
;; WIT and builds the component at load (then caches it). It denies tools whose
;; name starts with "Web" (WebFetch, WebSearch).
;;
;; Canonical ABI of `decide(request) -> result<verdict, string>`: the request
;; arrives by pointer (tool name: ptr at +12, len at +16); the result is
;; written at 512 (0 ok; +4 decision tag, 1 = deny; +8/+12 reason ptr/len;
;; +20 context tag) and returned by pointer.
(module
  (memory (export "memory") 1)
  (global $bump (mut i32) (i32.const 4096))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                            (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
    (global.set $bump (i32.add (local.get $at) (local.get 3)))
    (block $ok
      (br_if $ok (i32.le_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536))))
      (drop (memory.grow (i32.add (i32.div_u (i32.sub (global.get $bump) (i32.mul (memory.size) (i32.const 65536))) (i32.const 65536)) (i32.const 1)))))
    (local.get $at))
  (func (export "decide") (param $args i32) (result i32)
    (local $tool i32)
    (local.set $tool (i32.load offset=12 (local.get $args)))
    (if (i32.and
          (i32.ge_u (i32.load offset=16 (local.get $args)) (i32.const 3))
          (i32.and (i32.eq (i32.load8_u (local.get $tool)) (i32.const 87))
            (i32.and (i32.eq (i32.load8_u offset=1 (local.get $tool)) (i32.const 101))
                     (i32.eq (i32.load8_u offset=2 (local.get $tool)) (i32.const 98)))))
      (then
        (i32.store8 (i32.const 516) (i32.const 1))
        (i32.store (i32.const 520) (i32.const 2048))
        (i32.store (i32.const 524) (i32.const 88))))
    (i32.const 512))
  (data (i32.const 2048) "Network tools are disabled in this workspace; a sandboxed wasm guard made this decision.")
)
