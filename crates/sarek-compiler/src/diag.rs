//! Source spans and located diagnostics.
//!
//! Every pass reports user errors as [`Diagnostic`]s carrying [`Span`]s into a [`SourceMap`];
//! rendering (rustc style, through `codespan-reporting`) happens once, at the edge (CLI,
//! proc-macro, tests). Passes never print.

use codespan_reporting::diagnostic as cr;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A byte range in one source file. `Span::DUMMY` marks compiler-synthesised nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const DUMMY: Span = Span {
        file: FileId(u32::MAX),
        start: 0,
        end: 0,
    };

    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both (same file assumed; `self` wins otherwise).
    pub fn to(self, other: Span) -> Span {
        if self.file != other.file || self.is_dummy() {
            return if self.is_dummy() { other } else { self };
        }
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn is_dummy(&self) -> bool {
        self.file.0 == u32::MAX
    }
}

/// The source files of one compilation.
#[derive(Default, Clone)]
pub struct SourceMap {
    files: Vec<(String, String)>,
}

impl SourceMap {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push((name.into(), text.into()));
        FileId(self.files.len() as u32 - 1)
    }

    pub fn name(&self, id: FileId) -> &str {
        &self.files[id.0 as usize].0
    }

    /// Every file, in the order added.
    pub fn ids(&self) -> impl Iterator<Item = FileId> + use<> {
        (0..self.files.len() as u32).map(FileId)
    }

    pub fn text(&self, id: FileId) -> &str {
        &self.files[id.0 as usize].1
    }

    /// 1-based (line, column) of a byte offset; column counts chars.
    pub fn line_col(&self, id: FileId, offset: u32) -> (usize, usize) {
        let text = self.text(id);
        let offset = (offset as usize).min(text.len());
        let before = &text[..floor_char_boundary(text, offset)];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    /// `file:line:col` of a span's start (`<generated>` for dummy spans).
    pub fn location(&self, span: Span) -> String {
        if span.is_dummy() || span.file.0 as usize >= self.files.len() {
            return "<generated>".to_string();
        }
        let (l, c) = self.line_col(span.file, span.start);
        format!("{}:{}:{}", self.name(span.file), l, c)
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// A secondary span with a short message ("the condition depends on `thread_idx_x`").
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// One located user-facing message.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    /// Text under the primary caret (may be empty).
    pub label: String,
    pub secondary: Vec<Label>,
    /// `note: ...` lines.
    pub notes: Vec<String>,
    /// `help: ...` lines (e.g. "did you mean `thread_idx_x`?").
    pub help: Vec<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            notes: Vec::new(),
            help: Vec::new(),
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// Render rustc-style (`error: ...`, `--> file:line:col`, source line, carets).
    pub fn render(&self, sources: &SourceMap, color: bool) -> String {
        render_all(std::slice::from_ref(self), sources, color)
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Render several diagnostics into one string.
pub fn render_all(diags: &[Diagnostic], sources: &SourceMap, color: bool) -> String {
    let mut files = SimpleFiles::new();
    for (name, text) in &sources.files {
        files.add(name.clone(), text.clone());
    }
    let config = term::Config::default();
    let mut out: Vec<u8> = Vec::new();
    for d in diags {
        let cd = to_codespan(d, sources);
        if color {
            let mut w = term::termcolor::Ansi::new(&mut out);
            let _ = term::emit_to_write_style(&mut w, &config, &files, &cd);
        } else {
            let mut w = term::termcolor::NoColor::new(&mut out);
            let _ = term::emit_to_write_style(&mut w, &config, &files, &cd);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn to_codespan(d: &Diagnostic, sources: &SourceMap) -> cr::Diagnostic<usize> {
    let valid = |s: &Span| !s.is_dummy() && (s.file.0 as usize) < sources.files.len();
    let mut labels = Vec::new();
    if valid(&d.span) {
        labels.push(
            cr::Label::primary(
                d.span.file.0 as usize,
                d.span.start as usize..d.span.end as usize,
            )
            .with_message(d.label.clone()),
        );
    }
    for l in &d.secondary {
        if valid(&l.span) {
            labels.push(
                cr::Label::secondary(
                    l.span.file.0 as usize,
                    l.span.start as usize..l.span.end as usize,
                )
                .with_message(l.message.clone()),
            );
        }
    }
    let mut notes: Vec<String> = d.notes.iter().map(|n| format!("note: {n}")).collect();
    notes.extend(d.help.iter().map(|h| format!("help: {h}")));
    let base = match d.severity {
        Severity::Error => cr::Diagnostic::error(),
        Severity::Warning => cr::Diagnostic::warning(),
    };
    base.with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(notes)
}

/// Names longer than this get no "did you mean" help: the edit distance costs the product of
/// the two lengths, and a megabyte-long unbound name took minutes against the built-ins.
pub const MAX_SUGGESTED_NAME: usize = 256;

/// The closest candidate by edit distance, for "did you mean" help.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = name.chars().count();
    if len > MAX_SUGGESTED_NAME {
        return None;
    }
    let max = (len / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        // The distance is at least the difference of the lengths: skip the far ones unmeasured.
        .filter(|c| c.chars().count().abs_diff(len) <= max)
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= max)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// Edit distance over chars (optimal string alignment: insertions, deletions, substitutions
/// and swaps of two adjacent characters each cost one, so `clmap` is one edit from `clamp`).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_swaps_cost_one_edit() {
        assert_eq!(edit_distance("clmap", "clamp"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(closest("clmap", ["clamp", "clz"]), Some("clamp"));
    }

    #[test]
    fn long_names_are_suggested_only_when_cheap() {
        // A candidate far shorter or longer is not measured; within the limit it still is.
        let long = "x".repeat(MAX_SUGGESTED_NAME);
        let near = "x".repeat(MAX_SUGGESTED_NAME - 1);
        assert_eq!(
            closest(&long, [near.as_str(), "clamp"]),
            Some(near.as_str())
        );
        // A megabyte-long name (minutes against the built-ins before) gets no suggestion.
        let huge = "x".repeat(1 << 20);
        assert_eq!(closest(&huge, [&huge[1..], "clamp"]), None);
    }
}
