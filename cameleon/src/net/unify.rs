//! Type variables of structural operators, unified along connections (docs/semantics.md §1).

use crate::types::TypeInfo;

#[derive(Clone, Copy)]
pub(super) enum Term {
    Is(&'static TypeInfo),
    Slot(usize),
}

/// Union-find over type variables, each root optionally bound to a type (with the connection
/// that bound it).
pub(super) struct Unify {
    pub(super) parent: Vec<usize>,
    pub(super) bound: Vec<Option<(&'static TypeInfo, usize)>>,
}

pub(super) type Mismatch = (&'static str, &'static str, Option<usize>);

impl Unify {
    pub(super) fn new(n: usize) -> Self {
        Unify {
            parent: (0..n).collect(),
            bound: vec![None; n],
        }
    }

    pub(super) fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    pub(super) fn binding(&mut self, x: usize) -> Option<&'static TypeInfo> {
        let r = self.find(x);
        self.bound[r].map(|b| b.0)
    }

    pub(super) fn bind(
        &mut self,
        slot: usize,
        t: &'static TypeInfo,
        conn: usize,
        slot_is_source: bool,
    ) -> Result<(), Mismatch> {
        let r = self.find(slot);
        match self.bound[r] {
            None => {
                self.bound[r] = Some((t, conn));
                Ok(())
            }
            Some((b, _)) if b == t => Ok(()),
            Some((b, origin)) => Err(if slot_is_source {
                (b.name, t.name, Some(origin))
            } else {
                (t.name, b.name, Some(origin))
            }),
        }
    }

    pub(super) fn unify(&mut self, from: Term, to: Term, conn: usize) -> Result<(), Mismatch> {
        match (from, to) {
            (Term::Is(a), Term::Is(b)) if a == b => Ok(()),
            (Term::Is(a), Term::Is(b)) => Err((a.name, b.name, None)),
            (Term::Is(a), Term::Slot(s)) => self.bind(s, a, conn, false),
            (Term::Slot(s), Term::Is(b)) => self.bind(s, b, conn, true),
            (Term::Slot(a), Term::Slot(b)) => {
                let (ra, rb) = (self.find(a), self.find(b));
                if ra == rb {
                    return Ok(());
                }
                match (self.bound[ra], self.bound[rb]) {
                    (Some((ta, oa)), Some((tb, _))) if ta != tb => {
                        Err((ta.name, tb.name, Some(oa)))
                    }
                    (ba, bb) => {
                        self.parent[rb] = ra;
                        self.bound[ra] = ba.or(bb);
                        Ok(())
                    }
                }
            }
        }
    }
}
