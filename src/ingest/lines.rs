//! Reading newline-delimited input with a bound on line length, so one huge line cannot
//! exhaust memory.

use std::io::{self, BufRead};

use bytes::Bytes;

/// One line of input, without its line terminator.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// Shared bytes: a stream message's body is passed on without a copy.
    Complete(Bytes),
    /// A line longer than the limit: its first `limit` bytes and its full length.
    TooLong { prefix: Vec<u8>, len: u64 },
}

/// Splits a reader into lines of at most `max_bytes` bytes each.
pub struct BoundedLines<R> {
    reader: R,
    max_bytes: usize,
}

impl<R: BufRead> BoundedLines<R> {
    pub fn new(reader: R, max_bytes: usize) -> Self {
        Self { reader, max_bytes }
    }

    /// The underlying reader.
    pub fn into_inner(self) -> R {
        self.reader
    }

    /// The next line, or `None` at the end of input.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut len: u64 = 0;
        let mut saw_any = false;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            saw_any = true;
            let (chunk, found_newline) = match memchr_newline(buf) {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            len += chunk.len() as u64;
            let room = self.max_bytes.saturating_sub(line.len());
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let consumed = chunk.len() + usize::from(found_newline);
            self.reader.consume(consumed);
            if found_newline {
                break;
            }
        }
        if !saw_any {
            return Ok(None);
        }
        if line.last() == Some(&b'\r') && len <= self.max_bytes as u64 {
            line.pop();
            len -= 1;
        }
        Ok(Some(if len > self.max_bytes as u64 { Line::TooLong { prefix: line, len } } else { Line::Complete(line.into()) }))
    }
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<Line> {
        let mut lines = BoundedLines::new(io::BufReader::with_capacity(4, input), max);
        std::iter::from_fn(|| lines.next_line().unwrap()).collect()
    }

    #[test]
    fn splits_lines_and_strips_terminators() {
        assert_eq!(
            all(b"ab\r\ncd\n\nef", 10),
            vec![
                Line::Complete(Bytes::from_static(b"ab")),
                Line::Complete(Bytes::from_static(b"cd")),
                Line::Complete(Bytes::new()),
                Line::Complete(Bytes::from_static(b"ef")),
            ]
        );
    }

    #[test]
    fn long_lines_are_cut_and_measured_and_the_next_line_survives() {
        assert_eq!(
            all(b"0123456789abc\nok\n", 5),
            vec![Line::TooLong { prefix: b"01234".to_vec(), len: 13 }, Line::Complete(Bytes::from_static(b"ok")),]
        );
    }
}
