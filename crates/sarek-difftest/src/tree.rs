//! The generated program as a tree of text templates, and the reductions the shrinker tries.
//!
//! The generator does not build the compiler's AST: it writes source text, so that every
//! kernel goes through the whole front end. Each node is a template (`$0`, `$1`, ... stand
//! for its children) tagged with what it is, which is all the shrinker needs: a statement can be
//! deleted, an expression of a scalar type can be replaced by a same-typed subexpression or
//! by a literal, a top-level item or a kernel parameter can be dropped. A reduction may well
//! produce a kernel the front end refuses or the interpreter faults on; the shrinker simply
//! rejects those candidates, so the reductions need not preserve well-typedness themselves.

use std::fmt::Write;

/// A scalar type of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ty {
    Bool,
    I32,
    I64,
    F32,
    F64,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::Bool => "bool",
            Ty::I32 => "int32",
            Ty::I64 => "int64",
            Ty::F32 => "float32",
            Ty::F64 => "float64",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, Ty::I32 | Ty::I64)
    }

    /// The simplest literal of the type, what the shrinker puts in place of an expression.
    pub fn zero(self) -> &'static str {
        match self {
            Ty::Bool => "false",
            Ty::I32 => "0",
            Ty::I64 => "0L",
            Ty::F32 => "0.0",
            Ty::F64 => "0.0d",
        }
    }
}

/// What a node is, for printing and shrinking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An expression of a scalar type.
    Expr(Ty),
    /// A literal of a scalar type (not reduced further).
    Lit(Ty),
    /// An expression of unit type, one element of a block.
    Stmt,
    /// `let ... = $0 in`: scopes over the rest of its block.
    Let,
    /// Statements in order, printed `begin s1; s2; ... () end`.
    Block,
    /// A top-level item (type, helper, kernel): removable.
    Item,
    /// A kernel parameter `(name : ty)`: removable.
    Param,
    /// Anything else (aggregate-typed expressions, match arms): only its children reduce.
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    /// The template; `$0`, `$1`, ... are the children. Blocks and the program root ignore it.
    pub text: String,
    pub children: Vec<Node>,
}

impl Node {
    pub fn new(kind: Kind, text: impl Into<String>, children: Vec<Node>) -> Node {
        Node {
            kind,
            text: text.into(),
            children,
        }
    }

    pub fn expr(ty: Ty, text: impl Into<String>, children: Vec<Node>) -> Node {
        Node::new(Kind::Expr(ty), text, children)
    }

    pub fn lit(ty: Ty, text: impl Into<String>) -> Node {
        Node::new(Kind::Lit(ty), text, vec![])
    }

    pub fn stmt(text: impl Into<String>, children: Vec<Node>) -> Node {
        Node::new(Kind::Stmt, text, children)
    }

    pub fn let_(text: impl Into<String>, children: Vec<Node>) -> Node {
        Node::new(Kind::Let, text, children)
    }

    pub fn block(stmts: Vec<Node>) -> Node {
        Node::new(Kind::Block, "", stmts)
    }

    pub fn other(text: impl Into<String>, children: Vec<Node>) -> Node {
        Node::new(Kind::Other, text, children)
    }

    pub fn ty(&self) -> Option<Ty> {
        match self.kind {
            Kind::Expr(t) | Kind::Lit(t) => Some(t),
            _ => None,
        }
    }

    /// Number of nodes (the shrinker's measure of size).
    pub fn size(&self) -> usize {
        1 + self.children.iter().map(Node::size).sum::<usize>()
    }

    /// The source text, indented by `indent` levels for blocks.
    pub fn print(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, indent: usize) {
        if self.kind == Kind::Block {
            let pad = "  ".repeat(indent + 1);
            out.push_str("begin\n");
            for s in &self.children {
                out.push_str(&pad);
                s.write(out, indent + 1);
                if s.kind == Kind::Let {
                    out.push('\n');
                } else {
                    out.push_str(";\n");
                }
            }
            let _ = write!(out, "{pad}()\n{}end", "  ".repeat(indent));
            return;
        }
        let mut chars = self.text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
                let mut k = 0usize;
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                    k = k * 10 + d as usize;
                    chars.next();
                }
                match self.children.get(k) {
                    Some(child) => child.write(out, indent),
                    None => out.push_str("<missing>"),
                }
            } else {
                out.push(c);
            }
        }
    }

    /// The node at `path` (child indices from the root).
    pub fn at(&self, path: &[usize]) -> &Node {
        path.iter().fold(self, |n, &i| &n.children[i])
    }

    fn at_mut(&mut self, path: &[usize]) -> &mut Node {
        path.iter().fold(self, |n, &i| &mut n.children[i])
    }

    /// Every node's path, parents before children (pre-order).
    pub fn paths(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut stack = vec![(self, Vec::new())];
        while let Some((n, p)) = stack.pop() {
            for (i, c) in n.children.iter().enumerate().rev() {
                let mut q = p.clone();
                q.push(i);
                stack.push((c, q));
            }
            out.push(p);
        }
        out
    }

    /// The reductions of this tree, largest first: each is a smaller tree. The order is
    /// deterministic, so a shrink is reproducible.
    pub fn reductions(&self) -> Vec<Node> {
        let mut out = Vec::new();
        let paths = self.paths();
        // 1. Drop an item, a parameter, or a statement of a block.
        for p in &paths {
            let n = self.at(p);
            for (i, c) in n.children.iter().enumerate() {
                let removable = matches!(c.kind, Kind::Item | Kind::Param)
                    || (n.kind == Kind::Block && matches!(c.kind, Kind::Stmt | Kind::Let));
                if removable && !(c.kind == Kind::Item && c.text.starts_with("let%kernel")) {
                    let mut t = self.clone();
                    if n.kind == Kind::Block {
                        t.at_mut(p).children.remove(i);
                    } else {
                        // A template child: blank it, so `$k` of the siblings stay valid.
                        t.at_mut(p).children[i] = Node::other("", vec![]);
                    }
                    out.push(t);
                }
            }
        }
        // 2. Replace a compound statement by one of its blocks (`if c then A else B` -> A).
        for p in &paths {
            let n = self.at(p);
            if n.kind == Kind::Stmt {
                for c in n.children.iter().filter(|c| c.kind == Kind::Block) {
                    let mut t = self.clone();
                    *t.at_mut(p) = c.clone();
                    out.push(t);
                }
            }
        }
        // 3. Replace an expression by a same-typed subexpression, then by a literal.
        for p in &paths {
            let n = self.at(p);
            let Kind::Expr(ty) = n.kind else { continue };
            for sub in same_typed_descendants(n, ty) {
                let mut t = self.clone();
                *t.at_mut(p) = sub.clone();
                out.push(t);
            }
            let mut t = self.clone();
            *t.at_mut(p) = Node::lit(ty, ty.zero());
            out.push(t);
        }
        // 4. Simplify literals: a non-zero literal to zero.
        for p in &paths {
            let n = self.at(p);
            if let Kind::Lit(ty) = n.kind
                && n.text != ty.zero()
            {
                let mut t = self.clone();
                *t.at_mut(p) = Node::lit(ty, ty.zero());
                out.push(t);
            }
        }
        out
    }
}

/// The nearest descendants of `n` of type `ty` (not looking below one found).
fn same_typed_descendants(n: &Node, ty: Ty) -> Vec<&Node> {
    let mut out = Vec::new();
    for c in &n.children {
        if c.ty() == Some(ty) {
            out.push(c);
        } else if c.kind != Kind::Block {
            out.extend(same_typed_descendants(c, ty));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_templates_and_blocks() {
        let e = Node::expr(
            Ty::I32,
            "($0 + $1)",
            vec![Node::lit(Ty::I32, "1"), Node::lit(Ty::I32, "2")],
        );
        let b = Node::block(vec![
            Node::let_("let x = $0 in", vec![e]),
            Node::stmt("out.(i) <- x", vec![]),
        ]);
        assert_eq!(
            b.print(),
            "begin\n  let x = (1 + 2) in\n  out.(i) <- x;\n  ()\nend"
        );
    }

    #[test]
    fn reductions_shrink() {
        let e = Node::expr(
            Ty::I32,
            "($0 + $1)",
            vec![Node::lit(Ty::I32, "1"), Node::lit(Ty::I32, "2")],
        );
        let b = Node::block(vec![Node::stmt("out.(i) <- $0", vec![e])]);
        let r = b.reductions();
        assert!(r.iter().all(|t| t.size() <= b.size() && *t != b));
        assert!(r.iter().any(|t| t.print().contains("out.(i) <- 1;")));
        assert!(r.iter().any(|t| t.children.is_empty()));
    }
}
