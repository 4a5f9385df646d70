//! Server-sent events, as Streamable HTTP carries MCP messages: read from
//! the server, written to the client.
//!
//! # Why a reader of our own
//!
//! The proxy needs three things an SSE client library does not give
//! together: a bound on one event's size that holds before the event is
//! whole (a server that never ends an event must not grow memory), each
//! event's `id` kept beside its data (the client resumes a stream by it,
//! through the proxy) and its `retry` (how long the client waits before it
//! does: a server that closes a stream on purpose, to be polled, says so
//! there, and a client that never hears it waits its own default instead),
//! and events of another type than `message` dropped
//! rather than delivered: MCP sends only `message` events, and an event a
//! client would ignore must not reach it as one it reads. The format is
//! small (fields per line, a blank line ends an event), so the reader is
//! too, and it is pinned by its tests below and fuzzed through the proxy.

use bytes::Bytes;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// One event the server sent.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Event {
    /// Its `id`, by which a client resumes the stream after it.
    pub(crate) id: Option<String>,
    /// Its data lines, joined by `\n`; `None` when it had none (a priming
    /// event carries only an id).
    pub(crate) data: Option<Vec<u8>>,
    /// Its `retry`, in milliseconds: how long a client waits before it
    /// reconnects (only ASCII digits make one, as the format says).
    pub(crate) retry: Option<u64>,
    /// It grew past the cap: this many bytes were skipped, data and all.
    pub(crate) oversized: Option<usize>,
}

/// Reads events from a byte stream fed in pieces. Lines end at `\n` (a
/// `\r` before it is dropped; a lone `\r` as a line end, which no MCP SDK
/// writes, is not one).
pub(crate) struct Reader {
    max: usize,
    line: Vec<u8>,
    /// Bytes of the line being read, kept or not.
    line_len: usize,
    /// The line's last byte so far was `\r`.
    line_cr: bool,
    event: Event,
    /// Bytes of the event so far; past `max` nothing more of it is kept.
    size: usize,
    /// The event's type is not `message`: it is read to its end and dropped.
    foreign: bool,
    /// Data lines in the event so far.
    data_lines: usize,
}

impl Reader {
    pub(crate) fn new(max: usize) -> Self {
        Reader {
            max,
            line: Vec::new(),
            line_len: 0,
            line_cr: false,
            event: Event::default(),
            size: 0,
            foreign: false,
            data_lines: 0,
        }
    }

    /// The events `bytes` completes, in order.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut events = Vec::new();
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            let (content, ended) = match piece.strip_suffix(b"\n") {
                Some(content) => (content, true),
                None => (piece, false),
            };
            if let Some(last) = content.last() {
                self.line_cr = *last == b'\r';
            }
            self.line_len += content.len();
            self.size += content.len();
            if self.size > self.max {
                self.line.clear();
            } else {
                self.line.extend_from_slice(content);
            }
            if ended {
                self.end_line(&mut events);
            }
        }
        events
    }

    fn end_line(&mut self, events: &mut Vec<Event>) {
        let blank = self.line_len == 0 || (self.line_len == 1 && self.line_cr);
        self.line_len = 0;
        self.line_cr = false;
        let mut line = std::mem::take(&mut self.line);
        if blank {
            let event = std::mem::take(&mut self.event);
            if self.size > self.max {
                events.push(Event {
                    oversized: Some(self.size),
                    ..Event::default()
                });
            } else if !self.foreign
                && (event.data.is_some() || event.id.is_some() || event.retry.is_some())
            {
                events.push(event);
            }
            self.size = 0;
            self.foreign = false;
            self.data_lines = 0;
            return;
        }
        // Over the cap, the event's lines are no longer read.
        if self.size > self.max || line.starts_with(b":") {
            return;
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &b""[..]),
        };
        match field {
            b"data" => {
                let data = self.event.data.get_or_insert_with(Vec::new);
                if self.data_lines > 0 {
                    data.push(b'\n');
                    self.size += 1;
                }
                data.extend_from_slice(value);
                self.data_lines += 1;
            }
            b"id" if !value.contains(&0) => {
                self.event.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.event.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            b"event" => self.foreign = value != b"message",
            _ => {}
        }
    }
}

/// One message for the client, with the server's event id and `retry`
/// when it came as an event that had them.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub(crate) message: Vec<u8>,
    pub(crate) id: Option<String>,
    pub(crate) retry: Option<u64>,
}

/// `out` as one event of the stream the client reads.
pub(crate) fn encode(out: &Out) -> Bytes {
    let mut event = Vec::with_capacity(out.message.len() + 48);
    if let Some(retry) = out.retry {
        event.extend_from_slice(format!("retry: {retry}\n").as_bytes());
    }
    if let Some(id) = &out.id {
        event.extend_from_slice(b"id: ");
        event.extend_from_slice(id.replace(['\r', '\n'], "").as_bytes());
        event.push(b'\n');
    }
    event.extend_from_slice(b"event: message\n");
    for line in out.message.split(|b| *b == b'\n') {
        event.extend_from_slice(b"data: ");
        event.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        event.push(b'\n');
    }
    event.push(b'\n');
    Bytes::from(event)
}

/// A response body that streams what a relay sends, as events, and ends
/// when every sender is gone.
pub(crate) struct Stream(pub(crate) mpsc::Receiver<Out>);

impl hyper::body::Body for Stream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|out| out.map(|out| Ok(hyper::body::Frame::data(encode(&out)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(stream: &[u8], max: usize, piece: usize) -> Vec<Event> {
        let mut reader = Reader::new(max);
        stream
            .chunks(piece)
            .flat_map(|chunk| reader.feed(chunk))
            .collect()
    }

    #[test]
    fn events_are_read_whatever_the_pieces_they_arrive_in() {
        let stream = b": comment\nid: 7\nevent: message\ndata: {\"a\":\ndata: 1}\n\nretry: 5\n\ndata:{\"b\":2}\r\n\r\n";
        for piece in [1, 2, 5, 1000] {
            assert_eq!(
                events(stream, 1024, piece),
                vec![
                    Event {
                        id: Some("7".into()),
                        data: Some(b"{\"a\":\n1}".to_vec()),
                        ..Event::default()
                    },
                    Event {
                        retry: Some(5),
                        ..Event::default()
                    },
                    Event {
                        data: Some(b"{\"b\":2}".to_vec()),
                        ..Event::default()
                    },
                ],
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn an_event_of_another_type_is_dropped_not_delivered() {
        let got = events(
            b"event: endpoint\ndata: {\"result\":{}}\n\ndata: {}\n\n",
            1024,
            3,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data.as_deref(), Some(&b"{}"[..]));
    }

    #[test]
    fn a_priming_event_keeps_its_id_without_data() {
        let got = events(b"id: abc\ndata:\n\n", 1024, 4);
        assert_eq!(got[0].id.as_deref(), Some("abc"));
        assert_eq!(got[0].data.as_deref(), Some(&b""[..]));
    }

    #[test]
    fn an_event_over_the_cap_is_skipped_whole_and_the_next_is_read() {
        let mut stream = b"data: ".to_vec();
        stream.extend(std::iter::repeat_n(b'x', 5000));
        stream.extend_from_slice(b"\ndata: more\n\ndata: {}\n\n");
        let got = events(&stream, 100, 7);
        assert_eq!(got.len(), 2);
        assert!(got[0].oversized.is_some_and(|n| n > 100), "{got:?}");
        assert_eq!(got[1].data.as_deref(), Some(&b"{}"[..]));
    }

    proptest::proptest! {
        /// However a stream is cut into pieces, the same events come out,
        /// and none holds more than the cap.
        #[test]
        fn events_do_not_depend_on_the_pieces_and_never_pass_the_cap(
            tokens in proptest::collection::vec(
                proptest::sample::select(vec![
                    &b"data:"[..], b"data: ", b"id: ", b"event: message", b"event: x",
                    b":", b"\n", b"\r\n", b"\r", b"{\"a\":1}", b"xyz", b"  ",
                ]),
                0..120,
            ),
            piece in 1usize..50,
            max in 1usize..64,
        ) {
            let stream: Vec<u8> = tokens.concat();
            let whole = events(&stream, max, stream.len().max(1));
            proptest::prop_assert_eq!(&events(&stream, max, piece), &whole);
            for event in &whole {
                proptest::prop_assert!(event.data.as_ref().is_none_or(|d| d.len() <= max));
            }
        }
    }

    #[test]
    fn what_is_written_reads_back_as_the_same_message() {
        let out = Out {
            message: b"{\"a\":\n1}".to_vec(),
            id: Some("4\n2".into()),
            retry: Some(1500),
        };
        let got = events(&encode(&out), 1024, 3);
        assert_eq!(got[0].data.as_deref(), Some(&out.message[..]));
        assert_eq!(got[0].id.as_deref(), Some("42"));
        assert_eq!(got[0].retry, Some(1500));
    }

    #[test]
    fn a_retry_is_only_digits() {
        for (field, retry) in [
            ("retry: 250", Some(250)),
            ("retry: 2.5", None),
            ("retry: -1", None),
            ("retry:", None),
        ] {
            let got = events(format!("{field}\nid: x\n\n").as_bytes(), 1024, 2);
            assert_eq!(got[0].retry, retry, "{field}");
        }
    }
}
