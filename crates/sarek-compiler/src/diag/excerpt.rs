//! The source a diagnostic shows: only the lines its labels touch, each longer one cut to a
//! window around the labels with `…` at the cuts.
//!
//! `codespan-reporting` prints a labelled line whole, so one label on a 100,000-character line
//! (a generated or minified source) printed all of it. An [`Excerpt`] is a `Files` whose text
//! holds just the shown lines, with the labels' offsets mapped into it; line numbers and the
//! header's column still come from the original file, so `file:line:col` is unchanged.
//! Lines break where [`line_breaks`] says (a lone `\r` too): `codespan`'s own line starts
//! (`files::line_starts`, `\n` only) are never consulted, as the excerpt answers every line
//! query itself and ends each shown line with `\n`.

use super::{Diagnostic, SourceMap, floor_char_boundary, line_breaks};
use codespan_reporting::files::{Error, Files};
use std::ops::Range;

/// A source line longer than this many bytes is shown as a window of this many bytes.
pub const MAX_SHOWN_LINE: usize = 160;
/// Bytes shown before the first labelled position of a cut line.
const LEAD: usize = 40;
/// A multi-line label shows its first lines and its last ones (`codespan`'s default context:
/// 3 lines after the start, 1 before the end).
const AFTER_START: usize = 3;
const BEFORE_END: usize = 1;

const CUT: &str = "…";

/// The byte offset where every line of `text` starts ([`line_breaks`]: `\n`, `\r\n` or a
/// lone `\r`).
pub fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(line_breaks(text)).collect()
}

/// One original line as shown.
struct Shown {
    /// Index of the line in the original file.
    index: usize,
    /// Its range in the excerpt's text, newline included.
    range: Range<usize>,
    /// Where the original line starts.
    line_start: usize,
    /// The original bytes shown, `window.start..window.end`.
    window: Range<usize>,
    /// Bytes of the `…` before the window (0 when the line is shown from its start).
    lead: usize,
}

/// One file's shown lines for one diagnostic.
pub struct Excerpt<'a> {
    name: &'a str,
    original: &'a str,
    line_count: usize,
    text: String,
    /// Ordered by `index`.
    lines: Vec<Shown>,
}

impl<'a> Excerpt<'a> {
    /// The lines of file `file` that `diagnostic`'s labels there need, at most one window each.
    pub fn new(
        sources: &'a SourceMap,
        file: usize,
        starts: &[usize],
        labels: &[Range<usize>],
    ) -> Excerpt<'a> {
        let (name, original) = &sources.files[file];
        let line_of = |byte: usize| starts.partition_point(|&s| s <= byte) - 1;
        // Where line `i`'s text ends, before its `\n`, `\r\n` or lone `\r`.
        let line_end = |i: usize| {
            let end = starts
                .get(i + 1)
                .map_or(original.len(), |&next| next - 1)
                .max(starts[i]);
            if end > starts[i] && original.as_bytes()[end - 1] == b'\r' {
                end - 1
            } else {
                end
            }
        };
        // Each shown line with the labelled positions on it.
        let mut wanted: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut want =
            |line: usize, at: Option<usize>| match wanted.iter_mut().find(|(l, _)| *l == line) {
                Some((_, at_list)) => at_list.extend(at),
                None => wanted.push((line, at.into_iter().collect())),
            };
        for r in labels {
            let (first, last) = (line_of(r.start), line_of(r.end));
            want(first, Some(r.start));
            want(last, Some(r.end));
            if first != last {
                for l in (first + 1..last).take(AFTER_START) {
                    want(l, None);
                }
                for l in (first + 1).max(last.saturating_sub(BEFORE_END))..last {
                    want(l, None);
                }
            }
        }
        // Between two shown lines, `codespan` prints a single line it skips instead of `·`.
        let labelled: Vec<usize> = wanted.iter().map(|(l, _)| *l).collect();
        for l in labelled {
            for near in [l.wrapping_sub(1), l + 1] {
                if near < starts.len() && !wanted.iter().any(|(w, _)| *w == near) {
                    wanted.push((near, Vec::new()));
                }
            }
        }
        wanted.sort_by_key(|(l, _)| *l);
        let mut text = String::new();
        let mut lines = Vec::with_capacity(wanted.len());
        for (index, at) in wanted {
            let (start, end) = (starts[index], line_end(index));
            let window = if end - start <= MAX_SHOWN_LINE {
                start..end
            } else {
                let first = at.iter().copied().min().unwrap_or(start);
                let from = first
                    .saturating_sub(LEAD)
                    .min(end - MAX_SHOWN_LINE)
                    .max(start);
                let from = floor_char_boundary(original, from);
                from..floor_char_boundary(original, (from + MAX_SHOWN_LINE).min(end))
            };
            let begin = text.len();
            let lead = if window.start > start {
                text.push_str(CUT);
                CUT.len()
            } else {
                0
            };
            // Control characters would reach the terminal as they are (an escape sequence in a
            // source could rewrite the screen): each is shown as one `?` per byte, so offsets
            // and columns stay.
            for c in original[window.clone()].chars() {
                if c.is_control() && c != '\t' {
                    text.extend(std::iter::repeat_n('?', c.len_utf8()));
                } else {
                    text.push(c);
                }
            }
            if window.end < end {
                text.push_str(CUT);
            }
            text.push('\n');
            lines.push(Shown {
                index,
                range: begin..text.len(),
                line_start: start,
                window,
                lead,
            });
        }
        Excerpt {
            name,
            original,
            line_count: starts.len(),
            text,
            lines,
        }
    }

    /// Where original byte `at` is shown: its place in the window, or the window's edge.
    pub fn map(&self, at: usize) -> usize {
        let at = floor_char_boundary(self.original, at.min(self.original.len()));
        let i = self
            .lines
            .partition_point(|l| l.line_start <= at)
            .saturating_sub(1);
        let Some(l) = self.lines.get(i) else { return 0 };
        let shown = at.clamp(l.window.start, l.window.end) - l.window.start;
        l.range.start + l.lead + shown
    }

    fn shown(&self, line_index: usize) -> Option<&Shown> {
        self.lines
            .binary_search_by_key(&line_index, |l| l.index)
            .ok()
            .map(|i| &self.lines[i])
    }
}

/// The excerpts of one diagnostic, by file index.
pub struct Excerpts<'a>(pub Vec<(usize, Excerpt<'a>)>);

impl<'a> Excerpts<'a> {
    fn get(&self, file: usize) -> Result<&Excerpt<'a>, Error> {
        self.0
            .iter()
            .find(|(f, _)| *f == file)
            .map(|(_, e)| e)
            .ok_or(Error::FileMissing)
    }
}

impl<'f> Files<'f> for Excerpts<'_> {
    type FileId = usize;
    type Name = &'f str;
    type Source = &'f str;

    fn name(&'f self, id: usize) -> Result<&'f str, Error> {
        Ok(self.get(id)?.name)
    }

    fn source(&'f self, id: usize) -> Result<&'f str, Error> {
        Ok(&self.get(id)?.text)
    }

    fn line_index(&'f self, id: usize, byte_index: usize) -> Result<usize, Error> {
        let e = self.get(id)?;
        let i = e
            .lines
            .partition_point(|l| l.range.start <= byte_index)
            .saturating_sub(1);
        e.lines.get(i).map(|l| l.index).ok_or(Error::FileMissing)
    }

    /// A line the diagnostic does not show (inside a long multi-line label) is empty.
    fn line_range(&'f self, id: usize, line_index: usize) -> Result<Range<usize>, Error> {
        let e = self.get(id)?;
        match e.shown(line_index) {
            Some(l) => Ok(l.range.clone()),
            None if line_index < e.line_count => Ok(0..0),
            None => Err(Error::LineTooLarge {
                given: line_index,
                max: e.line_count.saturating_sub(1),
            }),
        }
    }

    /// The column in the original line, in characters.
    fn column_number(
        &'f self,
        id: usize,
        line_index: usize,
        byte_index: usize,
    ) -> Result<usize, Error> {
        let e = self.get(id)?;
        let Some(l) = e.shown(line_index) else {
            return Ok(1);
        };
        let into = byte_index.saturating_sub(l.range.start + l.lead);
        let at = floor_char_boundary(e.original, (l.window.start + into).min(l.window.end));
        Ok(e.original[l.line_start..at].chars().count() + 1)
    }
}

/// Text longer than this many characters (a message quoting a 100,000-character name) keeps
/// its start and end around a `…`.
pub const MAX_MESSAGE_CHARS: usize = 600;

/// `text`, or its first and last `MAX_MESSAGE_CHARS / 2` characters around a `…`.
pub fn elide(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_MESSAGE_CHARS {
        return text.to_string();
    }
    let half = MAX_MESSAGE_CHARS / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!("{head}{CUT}{tail}")
}

/// The spans of `d` in file `file`, clamped into its text.
pub fn label_ranges(d: &Diagnostic, sources: &SourceMap, file: usize) -> Vec<Range<usize>> {
    let len = sources.files[file].1.len();
    std::iter::once(d.span)
        .chain(d.secondary.iter().map(|l| l.span))
        .filter(|s| !s.is_dummy() && s.file.0 as usize == file)
        .map(|s| {
            let start = (s.start as usize).min(len);
            start..(s.end as usize).clamp(start, len)
        })
        .collect()
}
