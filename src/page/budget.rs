//! Page budgets: bounds on what one page may make semclip build and spend.
//!
//! A page is input a third party controls. The parser and the hierarchy
//! builder amplify: a 69-byte table with `rowspan=1000 colspan=1000` is a
//! million cells, a 1 MB heading over 2,000 paragraphs was copied into every
//! paragraph's id, misnested formatting tags make html5ever reconstruct
//! elements without end. Bounding the *input* (`fetch.max_body`) bounds none
//! of these, so the *output* is bounded here, per page:
//!
//! | measure | what counts | default | largest corpus page |
//! |---|---|---:|---:|
//! | DOM nodes | elements, texts and comments the parser creates | 500,000 | 43,431 |
//! | DOM bytes | attribute and text bytes the parser stores | 32 MiB | 2.0 MiB |
//! | table cells | grid slots after span expansion, all tables together | 250,000 | 2,111 |
//! | hierarchy nodes | nodes of the semantic hierarchy | 500,000 | 3,732 |
//! | text bytes | bytes of labels, keys, column headers and texts | 32 MiB | 165 KiB |
//! | id bytes | bytes of every node's XPath id together | 64 MiB | 460 KiB |
//! | CPU | thread CPU time of the check's page work | 10 s | 0.04 s |
//!
//! The last column is the largest figure over the 374 pages of the corpus
//! (`../shared/corpus/`), measured by `cargo run --release --example
//! page_costs`: every default is over ten times the largest real page, and
//! together they keep one page's memory to a few hundred MB (measured in
//! BENCHMARKS.md, "Hostile pages").
//!
//! A [`Budget`] is charged as the work proceeds, not after it: the moment a
//! measure goes over, the budget records which one ([`Exceeded`]) and every
//! later charge answers `false`, so the parser drops the rest of the page,
//! the table builder stops placing cells and id assignment stops. The
//! caller then asks [`Budget::check`] and fails the page with the reason,
//! instead of storing a truncated hierarchy as if it were the page. Memory
//! stays within the limits plus what one step (one parser token, one table
//! row) adds.
//!
//! The CPU limit is measured on the calling thread's CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`), read every [`CPU_CHECK_EVERY`] ticks so the
//! clock costs nothing measurable; a busy machine does not make a page fail,
//! only work the page itself causes does.

use std::cell::Cell;
use std::fmt;
use std::time::Duration;

/// Ticks between two readings of the thread's CPU clock.
pub const CPU_CHECK_EVERY: u32 = 4096;

/// The bounds of one page (the daemon file's `limits.page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PageLimits {
    /// DOM nodes the parser may create.
    pub dom_nodes: u64,
    /// Attribute and text bytes the DOM may hold.
    pub dom_bytes: u64,
    /// Table grid slots after span expansion, all tables of the page.
    pub cells: u64,
    /// Hierarchy nodes.
    pub nodes: u64,
    /// Bytes of labels, keys, column headers and texts in the hierarchy.
    pub text_bytes: u64,
    /// Bytes of all node ids together.
    pub id_bytes: u64,
    /// Thread CPU time for the page's work (parse, build, extract, diff).
    pub cpu: Duration,
}

impl Default for PageLimits {
    fn default() -> Self {
        PageLimits {
            dom_nodes: 500_000,
            dom_bytes: 32 << 20,
            cells: 250_000,
            nodes: 500_000,
            text_bytes: 32 << 20,
            id_bytes: 64 << 20,
            cpu: Duration::from_secs(10),
        }
    }
}

impl PageLimits {
    /// No bounds at all (for tests and benchmarks that measure cost).
    pub fn unlimited() -> PageLimits {
        PageLimits {
            dom_nodes: u64::MAX,
            dom_bytes: u64::MAX,
            cells: u64::MAX,
            nodes: u64::MAX,
            text_bytes: u64::MAX,
            id_bytes: u64::MAX,
            cpu: Duration::MAX,
        }
    }
}

/// Which bound a page went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// DOM nodes.
    DomNodes,
    /// DOM bytes.
    DomBytes,
    /// Table cells after span expansion.
    Cells,
    /// Hierarchy nodes.
    Nodes,
    /// Hierarchy text bytes.
    TextBytes,
    /// Id bytes.
    IdBytes,
    /// CPU time.
    Cpu,
}

impl Measure {
    /// The daemon file key that sets this bound.
    pub fn key(self) -> &'static str {
        match self {
            Measure::DomNodes => "limits.page.dom_nodes",
            Measure::DomBytes => "limits.page.dom_bytes",
            Measure::Cells => "limits.page.cells",
            Measure::Nodes => "limits.page.nodes",
            Measure::TextBytes => "limits.page.text_bytes",
            Measure::IdBytes => "limits.page.id_bytes",
            Measure::Cpu => "limits.page.cpu",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Measure::DomNodes => "DOM nodes",
            Measure::DomBytes => "bytes of DOM text and attributes",
            Measure::Cells => "table cells after span expansion",
            Measure::Nodes => "hierarchy nodes",
            Measure::TextBytes => "bytes of hierarchy text",
            Measure::IdBytes => "bytes of node ids",
            Measure::Cpu => "CPU time",
        }
    }
}

/// A page went over one of its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct Exceeded {
    /// The bound.
    pub measure: Measure,
    /// Its limit (CPU in milliseconds).
    pub limit: u64,
}

impl Exceeded {
    fn describe(&self) -> String {
        let limit = match self.measure {
            Measure::Cpu => {
                humantime::format_duration(Duration::from_millis(self.limit)).to_string()
            }
            _ => self.limit.to_string(),
        };
        format!(
            "page too large: more than {limit} {} (the {} limit)",
            self.measure.what(),
            self.measure.key()
        )
    }
}

/// The running costs of one page against its [`PageLimits`]. Not `Sync`:
/// one budget belongs to the thread that builds the page.
pub struct Budget {
    limits: PageLimits,
    dom_nodes: Cell<u64>,
    dom_bytes: Cell<u64>,
    cells: Cell<u64>,
    nodes: Cell<u64>,
    text_bytes: Cell<u64>,
    id_bytes: Cell<u64>,
    /// The thread's CPU clock when the budget was made.
    cpu_start: Duration,
    ticks: Cell<u32>,
    exceeded: Cell<Option<Exceeded>>,
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("limits", &self.limits)
            .field("dom_nodes", &self.dom_nodes.get())
            .field("dom_bytes", &self.dom_bytes.get())
            .field("cells", &self.cells.get())
            .field("nodes", &self.nodes.get())
            .field("text_bytes", &self.text_bytes.get())
            .field("id_bytes", &self.id_bytes.get())
            .field("exceeded", &self.exceeded.get())
            .finish()
    }
}

impl Budget {
    /// A fresh budget; its CPU clock starts now, on this thread.
    pub fn new(limits: PageLimits) -> Budget {
        Budget {
            limits,
            dom_nodes: Cell::new(0),
            dom_bytes: Cell::new(0),
            cells: Cell::new(0),
            nodes: Cell::new(0),
            text_bytes: Cell::new(0),
            id_bytes: Cell::new(0),
            cpu_start: thread_cpu(),
            ticks: Cell::new(0),
            exceeded: Cell::new(None),
        }
    }

    /// A budget with the default limits.
    pub fn default_limits() -> Budget {
        Budget::new(PageLimits::default())
    }

    /// The limits.
    pub fn limits(&self) -> &PageLimits {
        &self.limits
    }

    /// `Err` with the first bound the page went over.
    pub fn check(&self) -> Result<(), Exceeded> {
        match self.exceeded.get() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// True once any bound was exceeded.
    pub fn is_exceeded(&self) -> bool {
        self.exceeded.get().is_some()
    }

    /// What the page used so far, measure by measure (in the shape of its
    /// limits), for benchmarks and the `page_costs` example.
    pub fn costs(&self) -> PageLimits {
        PageLimits {
            dom_nodes: self.dom_nodes.get(),
            dom_bytes: self.dom_bytes.get(),
            cells: self.cells.get(),
            nodes: self.nodes.get(),
            text_bytes: self.text_bytes.get(),
            id_bytes: self.id_bytes.get(),
            cpu: thread_cpu().saturating_sub(self.cpu_start),
        }
    }

    fn charge(&self, counter: &Cell<u64>, n: u64, limit: u64, measure: Measure) -> bool {
        if self.exceeded.get().is_some() {
            return false;
        }
        let total = counter.get().saturating_add(n);
        counter.set(total);
        if total > limit {
            self.exceeded.set(Some(Exceeded { measure, limit }));
            return false;
        }
        self.tick()
    }

    /// Charges one DOM node with `bytes` of text or attributes; `false`
    /// once the page is over a bound.
    pub fn dom(&self, nodes: u64, bytes: u64) -> bool {
        self.charge(
            &self.dom_nodes,
            nodes,
            self.limits.dom_nodes,
            Measure::DomNodes,
        ) && self.charge(
            &self.dom_bytes,
            bytes,
            self.limits.dom_bytes,
            Measure::DomBytes,
        )
    }

    /// Charges `n` table grid slots.
    pub fn cells(&self, n: u64) -> bool {
        self.charge(&self.cells, n, self.limits.cells, Measure::Cells)
    }

    /// Charges `nodes` hierarchy nodes holding `bytes` of text.
    pub fn nodes(&self, nodes: u64, bytes: u64) -> bool {
        self.charge(&self.nodes, nodes, self.limits.nodes, Measure::Nodes)
            && self.charge(
                &self.text_bytes,
                bytes,
                self.limits.text_bytes,
                Measure::TextBytes,
            )
    }

    /// Brings the node and text counters up to the whole hierarchy's
    /// `nodes` and `bytes` (parts of it were charged while it was built).
    pub fn settle_nodes(&self, nodes: u64, bytes: u64) -> bool {
        self.nodes(
            nodes.saturating_sub(self.nodes.get()),
            bytes.saturating_sub(self.text_bytes.get()),
        )
    }

    /// Forgets the id bytes charged so far, before the ids are made again.
    pub fn forget_ids(&self) {
        self.id_bytes.set(0);
    }

    /// Charges `bytes` of node ids.
    pub fn ids(&self, bytes: u64) -> bool {
        self.charge(
            &self.id_bytes,
            bytes,
            self.limits.id_bytes,
            Measure::IdBytes,
        )
    }

    /// Counts one step of work and, every [`CPU_CHECK_EVERY`] steps, reads
    /// the thread's CPU clock; `false` once the page is over a bound.
    pub fn tick(&self) -> bool {
        if self.exceeded.get().is_some() {
            return false;
        }
        let t = self.ticks.get().wrapping_add(1);
        self.ticks.set(t);
        if t.is_multiple_of(CPU_CHECK_EVERY) {
            return self.cpu_now();
        }
        true
    }

    /// Reads the CPU clock now (at the end of a stage); `false` once the
    /// page is over a bound.
    pub fn cpu_now(&self) -> bool {
        if self.exceeded.get().is_some() {
            return false;
        }
        if thread_cpu().saturating_sub(self.cpu_start) > self.limits.cpu {
            self.exceeded.set(Some(Exceeded {
                measure: Measure::Cpu,
                limit: u64::try_from(self.limits.cpu.as_millis()).unwrap_or(u64::MAX),
            }));
            return false;
        }
        true
    }
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;

    #[test]
    fn first_bound_exceeded_is_kept_and_later_charges_fail() {
        let b = Budget::new(PageLimits {
            cells: 10,
            ..PageLimits::default()
        });
        assert!(b.cells(10));
        assert!(b.check().is_ok());
        assert!(!b.cells(1));
        assert!(!b.nodes(1, 1), "every charge fails once over");
        let e = b.check().unwrap_err();
        assert_eq!(e.measure, Measure::Cells);
        assert_eq!(
            e.to_string(),
            "page too large: more than 10 table cells after span expansion (the limits.page.cells limit)"
        );
    }

    #[test]
    fn cpu_limit_is_measured_on_this_thread() {
        let b = Budget::new(PageLimits {
            cpu: Duration::from_millis(20),
            ..PageLimits::default()
        });
        let mut x = 0u64;
        let mut steps = 0u64;
        while b.tick() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(steps);
            steps += 1;
            assert!(steps < 1 << 40, "the CPU budget never ran out");
        }
        std::hint::black_box(x);
        let e = b.check().unwrap_err();
        assert_eq!(e.measure, Measure::Cpu);
        assert!(e.to_string().contains("20ms CPU time"), "{e}");
        // Sleeping is not CPU: a fresh budget survives a sleep.
        let b = Budget::new(PageLimits {
            cpu: Duration::from_millis(50),
            ..PageLimits::default()
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(b.cpu_now());
    }
}
