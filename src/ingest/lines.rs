//! Reading newline-delimited input with a bound on line length, so one huge line cannot
//! exhaust memory.

use std::io::{self, BufRead};

use bytes::{Bytes, BytesMut};

/// One line of input, without its line terminator.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// Shared bytes: a stream message's body is passed on without a copy.
    Complete(Bytes),
    /// A line longer than the limit: its first `limit` bytes and its full length.
    TooLong { prefix: Vec<u8>, len: u64 },
}

/// Splits a reader into lines of at most `max_bytes` bytes each.
///
/// Lines are slices of one shared buffer refilled a read at a time: a line costs no
/// allocation of its own.
pub struct BoundedLines<R> {
    reader: R,
    max_bytes: usize,
    /// Read and not yet returned: the start of the next line.
    pending: BytesMut,
    /// How much of `pending` is known to hold no newline.
    scanned: usize,
}

impl<R: BufRead> BoundedLines<R> {
    pub fn new(reader: R, max_bytes: usize) -> Self {
        Self { reader, max_bytes, pending: BytesMut::new(), scanned: 0 }
    }

    /// The underlying reader.
    pub fn into_inner(self) -> R {
        self.reader
    }

    /// The next line, or `None` at the end of input.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        loop {
            if let Some(i) = memchr_newline(&self.pending[self.scanned..]) {
                let end = self.scanned + i;
                let line = self.pending.split_to(end + 1);
                self.scanned = 0;
                return Ok(Some(self.line(line.freeze().slice(..end))));
            }
            if self.pending.len() > self.max_bytes {
                return self.too_long().map(Some);
            }
            self.scanned = self.pending.len();
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                if self.pending.is_empty() {
                    return Ok(None);
                }
                self.scanned = 0;
                let line = std::mem::take(&mut self.pending).freeze();
                return Ok(Some(self.line(line)));
            }
            self.pending.extend_from_slice(buf);
            let read = buf.len();
            self.reader.consume(read);
        }
    }

    /// A whole line without its newline: complete unless it is over the limit, its
    /// `\r` counted.
    fn line(&self, mut line: Bytes) -> Line {
        if line.len() > self.max_bytes {
            return Line::TooLong { prefix: line[..self.max_bytes].to_vec(), len: line.len() as u64 };
        }
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        Line::Complete(line)
    }

    /// A line found over the limit before its end: its first `max_bytes` bytes are kept,
    /// the rest read and measured.
    fn too_long(&mut self) -> io::Result<Line> {
        let prefix = self.pending[..self.max_bytes].to_vec();
        let mut len = self.pending.len() as u64;
        self.pending.clear();
        self.scanned = 0;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            match memchr_newline(buf) {
                Some(i) => {
                    len += i as u64;
                    self.reader.consume(i + 1);
                    break;
                }
                None => {
                    len += buf.len() as u64;
                    let read = buf.len();
                    self.reader.consume(read);
                }
            }
        }
        Ok(Line::TooLong { prefix, len })
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
    fn a_line_at_the_limit_is_complete_and_one_byte_more_is_too_long() {
        // The limit counts a `\r` before the newline; a last line needs no newline.
        assert_eq!(
            all(b"abcd\r\nabcde\r\nabcdef", 5),
            vec![
                Line::Complete(Bytes::from_static(b"abcd")),
                Line::TooLong { prefix: b"abcde".to_vec(), len: 6 },
                Line::TooLong { prefix: b"abcde".to_vec(), len: 6 },
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
