//! The AnalysisReport as pretty JSON, the same text `serde_json::to_writer_pretty` writes,
//! with the findings (nearly all of it on a large lake) rendered on every core, a round
//! of them at a time, so that memory holds one round's text, not the whole report's.
//! (Only evidence JSON with line breaks of its own differs: its lines are indented too.)

use std::io::{self, Write};

use serde::Serialize;

use super::analysis::{AnalysisReport, ReportFinding};

/// Findings each thread renders per round.
pub const ROUND_FINDINGS: usize = 2048;

pub fn write_json_pretty(report: &AnalysisReport, out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"{\n")?;
    field(out, "version", &report.version, false)?;
    field(out, "generatedAt", &report.generated_at, false)?;
    field(out, "runId", &report.run_id, false)?;
    field(out, "stats", &report.stats, false)?;
    field(out, "signalStats", &report.signal_stats, false)?;
    out.write_all(b"  \"findings\": ")?;
    findings(out, &report.findings)?;
    out.write_all(b",\n")?;
    field(out, "generatedOutputs", &report.generated_outputs, false)?;
    field(out, "ruleEffectiveness", &report.rule_effectiveness, false)?;
    // In the struct's order, as serde writes it.
    field(out, "processingState", &report.processing_state, report.factors.is_none())?;
    if let Some(factors) = &report.factors {
        field(out, "factors", factors, true)?;
    }
    out.write_all(b"}")
}

/// `  "name": value` at the report's top level.
fn field(out: &mut impl Write, name: &str, value: &impl Serialize, last: bool) -> io::Result<()> {
    write!(out, "  \"{name}\": ")?;
    pretty(&mut Indented { out, prefix: b"  " }, value)?;
    out.write_all(if last { b"\n" } else { b",\n" })
}

fn findings(out: &mut impl Write, findings: &[ReportFinding]) -> io::Result<()> {
    if findings.is_empty() {
        return out.write_all(b"[]");
    }
    out.write_all(b"[")?;
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut first = true;
    for round in findings.chunks(threads * ROUND_FINDINGS) {
        let texts: Vec<io::Result<Vec<u8>>> = std::thread::scope(|scope| {
            let parts: Vec<_> = round.chunks(ROUND_FINDINGS).map(|part| scope.spawn(|| render(part))).collect();
            parts.into_iter().map(|p| p.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        });
        for text in texts {
            let text = text?;
            // Each part's text starts with the separator ",\n    "; the first has no comma.
            out.write_all(if first { &text[1..] } else { &text })?;
            first = false;
        }
    }
    out.write_all(b"\n  ]")
}

/// `,\n    finding` for each of `part`.
fn render(part: &[ReportFinding]) -> io::Result<Vec<u8>> {
    let mut text = Vec::with_capacity(part.len() * 1024);
    for finding in part {
        text.extend_from_slice(b",\n    ");
        pretty(&mut Indented { out: &mut text, prefix: b"    " }, finding)?;
    }
    Ok(text)
}

fn pretty(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let mut serializer = serde_json::Serializer::pretty(out);
    value.serialize(&mut serializer).map_err(io::Error::from)
}

/// Writes through to `out`, every line after the first indented by `prefix`: a value
/// rendered at the top level then sits at the depth it is nested at.
struct Indented<'a, W: Write> {
    out: &'a mut W,
    prefix: &'static [u8],
}

impl<W: Write> Write for Indented<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        // Pretty JSON has line breaks only between tokens (one in a string is escaped).
        while let Some(at) = memchr::memchr(b'\n', buf) {
            self.out.write_all(&buf[..=at])?;
            self.out.write_all(self.prefix)?;
            buf = &buf[at + 1..];
        }
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
