//! Source spans and located diagnostics.
//!
//! Every pass reports user errors as [`Diagnostic`]s carrying [`Span`]s into a [`SourceMap`];
//! rendering (rustc style, through `codespan-reporting`) happens once, at the edge (CLI,
//! proc-macro, tests). Passes never print.

mod excerpt;

pub use excerpt::{MAX_MESSAGE_CHARS, MAX_SHOWN_LINE};

use codespan_reporting::diagnostic as cr;
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

    /// 1-based (line, column) of a byte offset; column counts chars. Lines break as
    /// [`line_breaks`] says.
    pub fn line_col(&self, id: FileId, offset: u32) -> (usize, usize) {
        let text = self.text(id);
        let offset = floor_char_boundary(text, (offset as usize).min(text.len()));
        let (mut line, mut line_start) = (1, 0);
        for start in line_breaks(text).take_while(|&start| start <= offset) {
            line += 1;
            line_start = start;
        }
        let col = text[line_start..offset].chars().count() + 1;
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

/// Where each line after the first starts: after every `\n`, and after every `\r` not
/// followed by `\n`, so `\n`, `\r\n` and a lone `\r` (old Mac files) are each one line
/// break. The lexer's layout, `line_col` and the rendered excerpts all break lines here.
pub fn line_breaks(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().filter_map(move |(i, &b)| {
        let ends_line = b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
        ends_line.then_some(i + 1)
    })
}

/// The lines of `text`, without their breaks ([`line_breaks`]); a break at the very end is
/// followed by one empty line.
pub fn source_lines(text: &str) -> impl Iterator<Item = &str> + '_ {
    let mut breaks = line_breaks(text);
    let mut start = Some(0);
    std::iter::from_fn(move || {
        let line_start = start?;
        let Some(next) = breaks.next() else {
            start = None;
            return Some(&text[line_start..]);
        };
        // `next - 1` is the break's last byte; a `\r` before a `\n` belongs to it.
        let mut end = next - 1;
        if text.as_bytes()[end] == b'\n' && end > line_start && text.as_bytes()[end - 1] == b'\r' {
            end -= 1;
        }
        start = Some(next);
        Some(&text[line_start..end])
    })
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

/// Render several diagnostics into one string. Each shows only the lines its labels touch,
/// a long one as a window around them ([`excerpt`]), and long texts elided in the middle.
pub fn render_all(diags: &[Diagnostic], sources: &SourceMap, color: bool) -> String {
    let config = term::Config::default();
    // Each file's line starts, found once for all the diagnostics.
    let mut starts: Vec<Option<Vec<usize>>> = vec![None; sources.files.len()];
    let mut out: Vec<u8> = Vec::new();
    for d in diags {
        let mut files = Vec::new();
        for file in 0..sources.files.len() {
            let ranges = excerpt::label_ranges(d, sources, file);
            if ranges.is_empty() {
                continue;
            }
            let starts =
                starts[file].get_or_insert_with(|| excerpt::line_starts(&sources.files[file].1));
            files.push((file, excerpt::Excerpt::new(sources, file, starts, &ranges)));
        }
        let files = excerpt::Excerpts(files);
        let cd = to_codespan(d, sources, &files);
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

fn to_codespan(
    d: &Diagnostic,
    sources: &SourceMap,
    files: &excerpt::Excerpts<'_>,
) -> cr::Diagnostic<usize> {
    let valid = |s: &Span| !s.is_dummy() && (s.file.0 as usize) < sources.files.len();
    let shown = |s: &Span| {
        let file = s.file.0 as usize;
        let e = files.0.iter().find(|(f, _)| *f == file).map(|(_, e)| e);
        let len = sources.files[file].1.len();
        let start = (s.start as usize).min(len);
        let end = (s.end as usize).clamp(start, len);
        e.map_or(0..0, |e| e.map(start)..e.map(end))
    };
    let mut labels = Vec::new();
    if valid(&d.span) {
        labels.push(
            cr::Label::primary(d.span.file.0 as usize, shown(&d.span))
                .with_message(excerpt::elide(&d.label)),
        );
    }
    for l in &d.secondary {
        if valid(&l.span) {
            labels.push(
                cr::Label::secondary(l.span.file.0 as usize, shown(&l.span))
                    .with_message(excerpt::elide(&l.message)),
            );
        }
    }
    let mut notes: Vec<String> = d
        .notes
        .iter()
        .map(|n| format!("note: {}", excerpt::elide(n)))
        .collect();
    notes.extend(
        d.help
            .iter()
            .map(|h| format!("help: {}", excerpt::elide(h))),
    );
    let base = match d.severity {
        Severity::Error => cr::Diagnostic::error(),
        Severity::Warning => cr::Diagnostic::warning(),
    };
    base.with_message(excerpt::elide(&d.message))
        .with_labels(labels)
        .with_notes(notes)
}

/// Messages listing names (a file's kernels) show at most this many, then count the rest:
/// a file of 20,000 kernels gave a 200 KB "choose one with --kernel" message.
pub const MAX_LISTED_NAMES: usize = 12;

/// `a, b, c`, or the first [`MAX_LISTED_NAMES`] and `and N more`.
pub fn name_list(names: &[&str]) -> String {
    let shown = names[..names.len().min(MAX_LISTED_NAMES)].join(", ");
    match names.len().saturating_sub(MAX_LISTED_NAMES) {
        0 => shown,
        rest => format!("{shown} and {rest} more"),
    }
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
    fn newline_crlf_and_a_lone_carriage_return_each_break_one_line() {
        let text = "a\nb\r\nc\rd\r\re";
        assert_eq!(line_breaks(text).collect::<Vec<_>>(), [2, 5, 7, 9, 10]);
        assert_eq!(
            source_lines(text).collect::<Vec<_>>(),
            ["a", "b", "c", "d", "", "e"]
        );
        assert_eq!(source_lines("x\r").collect::<Vec<_>>(), ["x", ""]);
        let mut sources = SourceMap::new();
        let file = sources.add("t", text);
        // The `\n` of `\r\n` is still on the line it ends.
        let at = |offset| sources.line_col(file, offset);
        assert_eq!(
            [at(0), at(3), at(4), at(5), at(9), at(10)],
            [(1, 1), (2, 2), (2, 3), (3, 1), (5, 1), (6, 1)]
        );
    }

    #[test]
    fn adjacent_swaps_cost_one_edit() {
        assert_eq!(edit_distance("clmap", "clamp"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(closest("clmap", ["clamp", "clz"]), Some("clamp"));
    }

    /// A file of one long line with `needle` at `at`, and the diagnostic rendered at it.
    fn render_on_long_line(at: usize, needle: &str) -> (String, usize) {
        let mut line = "x".repeat(100_000);
        line.replace_range(at..at + needle.len(), needle);
        let mut sources = SourceMap::new();
        let file = sources.add("long.sarek", format!("first\n{line}\nlast\n"));
        let start = 6 + at;
        let d = Diagnostic::error(Span::new(file, start, start + needle.len()), "bad")
            .with_label("here");
        (d.render(&sources, false), at + 1)
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_label() {
        for at in [0, 30, 50_000, 100_000 - 5] {
            let (shown, col) = render_on_long_line(at, "OOPS!");
            // 100,000 characters rendered whole before; now the window and the frame.
            assert!(shown.len() < 1_000, "{} bytes:\n{shown}", shown.len());
            assert!(shown.contains(&format!("long.sarek:2:{col}")), "{shown}");
            let source = shown.lines().find(|l| l.contains("OOPS!")).unwrap();
            let carets = shown.lines().find(|l| l.contains("^^^^^")).unwrap();
            // The carets sit under the label, counted in characters (`…` is one).
            let column = |l: &str, pat: &str| l[..l.find(pat).unwrap()].chars().count();
            assert_eq!(column(source, "OOPS!"), column(carets, "^^^^^"), "{shown}");
            assert_eq!(source.starts_with("2 │ …"), at > 40, "{shown}");
            assert!(source.ends_with('…') == (at < 100_000 - 5), "{shown}");
        }
    }

    #[test]
    fn a_label_over_many_long_lines_shows_its_ends_cut() {
        let long = "y".repeat(50_000);
        let text: String = (0..1_000).map(|_| format!("{long}\n")).collect();
        let mut sources = SourceMap::new();
        let file = sources.add("many.sarek", text.as_str());
        let span = Span::new(file, 10, text.len() - 10);
        let inner = Span::new(file, 50_001 * 500 + 7, 50_001 * 500 + 9);
        let d = Diagnostic::error(span, "all of it")
            .with_label("the whole file")
            .with_secondary(inner, "and a middle line");
        let shown = d.render(&sources, false);
        assert!(shown.len() < 4_000, "{} bytes:\n{shown}", shown.len());
        for line in ["1 ", "501 ", "1000 "] {
            assert!(
                shown.lines().any(|l| l.trim_start().starts_with(line)),
                "{shown}"
            );
        }
        assert!(shown.contains("many.sarek:1:11"), "{shown}");
    }

    #[test]
    fn short_lines_render_as_before_and_long_texts_are_elided() {
        let mut sources = SourceMap::new();
        let file = sources.add("s.sarek", "let x = 1\nlet y = z\n");
        let name = "n".repeat(100_000);
        let d = Diagnostic::error(Span::new(file, 18, 19), format!("unbound `{name}`"))
            .with_label("not found")
            .with_note(name.clone());
        let shown = d.render(&sources, false);
        assert!(shown.len() < 2 * MAX_MESSAGE_CHARS + 400, "{shown}");
        assert!(
            shown.contains("2 │ let y = z\n  │         ^ not found"),
            "{shown}"
        );
        assert!(shown.contains("s.sarek:2:9"), "{shown}");
        assert!(shown.contains("n…n"), "{shown}");
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
