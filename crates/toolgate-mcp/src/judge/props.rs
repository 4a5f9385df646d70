//! The judge against hostile message streams (proptest): whatever the
//! client and the server send, in whatever order, no call the chain
//! refused reaches the server and no result the chain did not judge
//! reaches the client.

use proptest::prelude::*;
use serde_json::{Value, json};

/// An id, sometimes one a hostile side would pick.
fn id() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..4).prop_map(Value::from),
        (0i64..4).prop_map(|n| Value::from(n.to_string())),
        Just(Value::Null),
        Just(json!(1.0)),
        Just(json!({"n": 1})),
    ]
}

/// A client message as text: calls (to refused tools and to `get`),
/// other requests, cancellations, notifications, batches, and texts that
/// hide a call (duplicate keys, escapes, a missing id).
fn client_text() -> impl Strategy<Value = String> {
    let call = (id(), prop::sample::select(vec!["danger", "get", "danger\u{0}"])).prop_map(|(id, tool)| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
            .to_string()
    });
    // Other requests have ids of their own (`p0`…`p3`): the answers to
    // them may carry anything.
    let other = (
        0..4,
        prop::sample::select(vec!["ping", "tools/list", "initialize", "x"]),
    )
        .prop_map(|(n, method)| {
            json!({"jsonrpc": "2.0", "id": format!("p{n}"), "method": method}).to_string()
        });
    let cancel = id().prop_map(|id| {
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}).to_string()
    });
    let hidden = (0i64..4).prop_flat_map(|n| {
        prop::sample::select(vec![
            format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping","method":"tools/call","params":{{"name":"danger"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools\/call","params":{{"name":"danger"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools\u002fcall","params":{{"name":"danger"}}}}"#),
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"danger"}}"#.to_owned(),
            format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"get","name":"danger"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"danger","task":{{}}}}}}"#),
        ])
    });
    let single = prop_oneof![call, other, cancel, hidden];
    prop_oneof![
        4 => single.clone(),
        1 => prop::collection::vec(single, 0..4).prop_map(|items| format!("[{}]", items.join(","))),
        1 => ".*".prop_map(|s: String| s),
    ]
}

/// A server message as text: answers carrying `RAW` output for any id,
/// errors, garbage, batches, and its own requests and notifications.
fn server_text() -> impl Strategy<Value = String> {
    let any_id = prop_oneof![id(), (0..4).prop_map(|n| Value::from(format!("p{n}")))];
    let answer = any_id.clone().prop_map(|id| {
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "RAW"}]}})
            .to_string()
    });
    let error = any_id.prop_map(|id| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": 1, "message": "RAW"}}).to_string()
    });
    let duplicate = (0i64..4).prop_map(|n| {
        format!(r#"{{"jsonrpc":"2.0","id":99,"id":{n},"result":{{"content":[{{"type":"text","text":"RAW"}}]}}}}"#)
    });
    let own = prop::sample::select(vec![
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}"#.to_owned(),
    ]);
    let single = prop_oneof![answer, error, duplicate, own];
    prop_oneof![
        4 => single.clone(),
        1 => prop::collection::vec(single, 0..4).prop_map(|items| format!("[{}]", items.join(","))),
        1 => ".*".prop_map(|s: String| s),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn no_refused_call_reaches_the_server_and_no_unjudged_result_reaches_the_client(
        steps in prop::collection::vec(prop_oneof![
            client_text().prop_map(|t| (true, t)),
            server_text().prop_map(|t| (false, t)),
        ], 1..24)
    ) {
        let steps: Vec<(bool, Vec<u8>)> = steps.into_iter().map(|(c, t)| (c, t.into_bytes())).collect();
        let broken = crate::fuzzing::judge_stream(&steps);
        prop_assert!(broken.is_empty(), "{broken:#?}");
    }
}

/// A client that pairs answers by id as the SDKs do (`5` and `5.0` one
/// key) must not be handed a server's answer to one request as the
/// answer to a tool call: the proxy refuses a request whose id a client
/// would read as one already in flight.
#[test]
fn an_id_a_client_reads_as_one_in_flight_is_refused() {
    let steps = [
        (true, r#"{"jsonrpc":"2.0","id":5.0,"method":"ping"}"#),
        (
            true,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get","arguments":{}}}"#,
        ),
        (
            false,
            r#"{"jsonrpc":"2.0","id":5.0,"result":{"content":[{"type":"text","text":"RAW"}]}}"#,
        ),
    ];
    let steps: Vec<(bool, Vec<u8>)> = steps
        .iter()
        .map(|(c, t)| (*c, t.as_bytes().to_vec()))
        .collect();
    let broken = crate::fuzzing::judge_stream(&steps);
    assert!(broken.is_empty(), "{broken:#?}");
}
