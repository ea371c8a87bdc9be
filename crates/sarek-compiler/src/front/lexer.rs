//! Lexer: source text to tokens with spans. (Stub: filled in by the parser work.)
