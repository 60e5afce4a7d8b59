//! Rendering clips: a clip document (the whole hierarchy, root `<page>`, or
//! a named clip, root `<clip>`) in, an HTML fragment or RDF out.
//!
//! - HTML: an XSLT 1.0 stylesheet from the stylesheet directory
//!   ([`HTML_STYLESHEET`] unless a clip names its own), then [`sanitize`],
//!   whatever the stylesheet emitted.
//! - RDF/XML: [`RDF_STYLESHEET`] with the clip's base IRI; the result is
//!   checked to parse as RDF/XML before it is handed out. [`turtle`]
//!   rewrites it as Turtle.
//!
//! libxslt stylesheets are neither freed (the crate has no `Drop` for them)
//! nor `Send`, so a small pool of dedicated threads, `semclip-xslt-N`
//! ([`RENDER_THREADS`] by default, `server.render_threads`), each owns the
//! stylesheets it parsed for the life of the process and runs transforms
//! from one bounded queue; [`Renderer`] is the cheap, cloneable handle that
//! sends them jobs. One long render (a 20,000-row table) occupies one
//! thread, not the server's every render. A stylesheet is read on first
//! use and kept: editing a file takes a restart. The threads stop when
//! the last [`Renderer`] is dropped. The server renders each variant of a
//! clip version once, in a task of its own, and keeps it even when the
//! request that asked for it timed out (see `ClipData::render_once`).
//!
//! Stylesheets are trusted operator files: they run with libxslt's default
//! security settings (`document()` reads any file the daemon can read,
//! `exsl:document` writes files), and libxslt writes their messages and
//! errors to standard error. Clients only choose among them by name and
//! set the parameters of [`HTML_PARAMS`], whose values reach the stylesheet
//! as XPath string literals, never as expressions.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use libxml::parser::{Parser, ParserOptions, XmlParseFailure};
use libxml::tree::{Document, SaveOptions};
use libxslt::stylesheet::Stylesheet;
use oxrdfxml::RdfXmlParser;
use oxttl::TurtleSerializer;
use tokio::sync::{mpsc, oneshot};

use crate::hierarchy::text::xml_allowed;
use crate::hierarchy::xpath_literal;
use crate::sync::lock;

/// Default stylesheet names.
pub const HTML_STYLESHEET: &str = "html.xsl";
/// The stylesheet that maps a clip to RDF/XML (see [`Renderer::rdf`]).
pub const RDF_STYLESHEET: &str = "rdf.xsl";
/// Stylesheet parameters a client may set from the query string (html).
pub const HTML_PARAMS: &[&str] = &["title", "show-caption", "decimal", "lang"];

/// The namespace of XSLT elements.
const XSLT_NAMESPACE: &str = "http://www.w3.org/1999/XSL/Transform";
/// The RDF vocabulary of the hierarchy (what `rdf.xsl` writes).
const SC_NAMESPACE: &str = "https://semclip.dev/ns/hierarchy/1#";
const RDF_NAMESPACE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
const XSD_NAMESPACE: &str = "http://www.w3.org/2001/XMLSchema#";

/// The longest parameter value a client may give, in characters.
const MAX_PARAM_CHARS: usize = 256;
/// The longest stylesheet name (a file name).
const MAX_NAME_BYTES: usize = 255;
/// The largest stylesheet file read.
const MAX_STYLESHEET_BYTES: u64 = 4 << 20;
/// Jobs waiting for the XSLT threads before senders wait their turn.
const QUEUE_DEPTH: usize = 64;
/// XSLT threads by default.
pub const RENDER_THREADS: usize = 2;
/// The largest clip document (bytes of XML) rendered in the small lane: a
/// few thousand cells, milliseconds of XSLT.
pub const SMALL_CLIP_BYTES: usize = 256 << 10;
/// Bytes of clip XML that big renders may hold at once. A render's peak
/// memory is about a hundred times its input (libxml2's tree of the clip,
/// libxslt's result tree, the HTML text and the sanitizer's parse: about
/// 600 MB for the 5.5 MB clip of a 20,000-row table, BENCHMARKS.md "Render
/// starvation"), so this keeps big renders under a gigabyte or so. One
/// render is always let in, however big; others find no room.
pub const MAX_BIG_RENDER_BYTES: usize = 8 << 20;

/// Everything that can go wrong rendering a clip.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No stylesheet of that name in the stylesheet directory.
    #[error("unknown stylesheet `{name}`: no such file in the stylesheet directory")]
    UnknownStylesheet {
        /// The name asked for.
        name: String,
    },
    /// A stylesheet that cannot be used: a bad name, outside the directory,
    /// not well-formed, not XSLT, or refused by libxslt.
    #[error("stylesheet {}: {cause}", path.display())]
    Stylesheet {
        /// The stylesheet's path (the name itself when the name is refused).
        path: PathBuf,
        /// What is wrong with it.
        cause: String,
    },
    /// The transform failed (a runtime error or `xsl:message terminate="yes"`).
    #[error("transform with stylesheet `{stylesheet}` failed: {cause}")]
    Transform {
        /// The stylesheet's name.
        stylesheet: String,
        /// What libxslt said.
        cause: String,
    },
    /// A parameter (or the RDF base IRI) that is not acceptable.
    #[error("bad parameter `{name}`: {reason}")]
    BadParam {
        /// The parameter's name.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// The clip document is not well-formed XML.
    #[error("the clip is not well-formed xml: {cause}")]
    Input {
        /// libxml2's description of the first problem.
        cause: String,
    },
    /// The RDF/XML could not be read (or the stylesheet wrote invalid RDF/XML).
    #[error("rdf: {cause}")]
    Rdf {
        /// The parser's or writer's complaint.
        cause: String,
    },
    /// The XSLT thread is gone.
    #[error("the xslt worker has stopped")]
    Stopped,
    /// This version of the clip already has every variant it may have
    /// rendered (kept or under way).
    #[error("too many variants of this clip are rendered: ask again without parameters, or later")]
    TooManyVariants,
    /// Every big-clip render slot (or the memory they may hold) is taken:
    /// not queued, so that a flood of big renders cannot grow a queue.
    #[error("the server is rendering other big clips: try again shortly")]
    Busy,
    /// The render did not finish within the request's patience, or failed
    /// a moment ago: it is not started again for every request.
    #[error("this clip is still being rendered (or failed a moment ago): try again later")]
    Unfinished {
        /// Seconds after which asking again may help.
        retry_after: u64,
    },
}

impl RenderError {
    /// Seconds a client should wait before asking again, for the errors
    /// that pass (the busy and unfinished ones).
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            RenderError::Busy => Some(2),
            RenderError::Unfinished { retry_after } => Some(*retry_after),
            _ => None,
        }
    }
}

/// What a transform's result becomes.
#[derive(Debug, Clone, Copy)]
enum Output {
    /// Serialized as HTML, then sanitized.
    Html,
    /// Serialized as XML, then checked to be RDF/XML.
    Rdf,
}

/// A job for the XSLT thread.
#[derive(Debug)]
enum Job {
    /// Load (if not yet loaded) stylesheet `name`.
    Check {
        name: String,
        reply: oneshot::Sender<Result<(), RenderError>>,
    },
    /// Run `stylesheet` over `clip_xml` with `params` (XPath expressions).
    Transform {
        stylesheet: String,
        clip_xml: String,
        params: Vec<(String, String)>,
        output: Output,
        reply: oneshot::Sender<Result<String, RenderError>>,
        /// A big render's admission, given back when the job is done.
        permit: Option<Permit>,
    },
}

/// The big lane's admission: how many renders and how many bytes of clip
/// XML it holds (queued or running).
#[derive(Debug)]
struct Admission {
    /// Renders at once: the big lane's threads, so none waits in a queue.
    slots: usize,
    held: std::sync::Mutex<(usize, usize)>,
}

impl Admission {
    /// Room for a render of `bytes`, or `None` when every slot is taken or
    /// the bytes would pass [`MAX_BIG_RENDER_BYTES`] (unless it is alone).
    fn admit(self: &Arc<Self>, bytes: usize) -> Option<Permit> {
        let mut held = lock(&self.held);
        let (renders, held_bytes) = *held;
        if renders >= self.slots || (renders > 0 && held_bytes + bytes > MAX_BIG_RENDER_BYTES) {
            return None;
        }
        *held = (renders + 1, held_bytes + bytes);
        Some(Permit {
            admission: Arc::clone(self),
            bytes,
        })
    }
}

/// One admitted big render; dropping it gives its room back.
#[derive(Debug)]
struct Permit {
    admission: Arc<Admission>,
    bytes: usize,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut held = lock(&self.admission.held);
        held.0 = held.0.saturating_sub(1);
        held.1 = held.1.saturating_sub(self.bytes);
    }
}

/// The handle of the XSLT threads: cheap to clone (it holds the channel
/// senders); the threads stop when the last clone is dropped.
///
/// Two lanes, so that a render never holds up an answer it is not for:
/// clips up to [`SMALL_CLIP_BYTES`] (and stylesheet checks) go to a thread
/// of their own, big clips to the pool; a big render is admitted only
/// while a pool thread is free and the big renders' input stays within
/// [`MAX_BIG_RENDER_BYTES`], else it is refused at once
/// ([`RenderError::Busy`]) rather than queued.
#[derive(Clone, Debug)]
pub struct Renderer {
    small: mpsc::Sender<Job>,
    big: mpsc::Sender<Job>,
    admission: Arc<Admission>,
}

impl Renderer {
    /// Starts the XSLT thread over the stylesheet directory (not read yet: stylesheets load lazily on first use and are then kept).
    ///
    /// Should the thread fail to start, every call answers
    /// [`RenderError::Stopped`] (and the failure is logged).
    pub fn start(dir: PathBuf) -> Renderer {
        Renderer::start_pool(dir, RENDER_THREADS)
    }

    /// Starts `threads` XSLT threads (at least one) for big clips and one
    /// for small clips.
    pub fn start_pool(dir: PathBuf, threads: usize) -> Renderer {
        let threads = threads.max(1);
        Renderer {
            small: lane(&dir, "small", 1),
            big: lane(&dir, "big", threads),
            admission: Arc::new(Admission {
                slots: threads,
                held: std::sync::Mutex::new((0, 0)),
            }),
        }
    }

    /// Checks that a stylesheet name is acceptable and exists and parses (used at config load and startup). Blocking-safe: may be called from async code via the worker.
    ///
    /// A stylesheet that passes stays loaded.
    pub async fn check(&self, name: &str) -> Result<(), RenderError> {
        check_name(name)?;
        let name = name.to_owned();
        ask(&self.small, |reply| Job::Check { name, reply }).await
    }

    /// The lane for a clip of `bytes`, with the big lane's admission.
    fn lane(&self, bytes: usize) -> Result<(&mpsc::Sender<Job>, Option<Permit>), RenderError> {
        if bytes <= SMALL_CLIP_BYTES {
            return Ok((&self.small, None));
        }
        match self.admission.admit(bytes) {
            Some(permit) => Ok((&self.big, Some(permit))),
            None => Err(RenderError::Busy),
        }
    }

    /// HTML fragment: XSLT `stylesheet` over `clip_xml` with params (checked and quoted), then sanitized.
    ///
    /// Parameter names must be in [`HTML_PARAMS`] and given once; values
    /// are at most 256 characters of text XML allows (no NUL) and reach
    /// the stylesheet as strings.
    pub async fn html(
        &self,
        stylesheet: &str,
        clip_xml: String,
        params: Vec<(String, String)>,
    ) -> Result<String, RenderError> {
        check_name(stylesheet)?;
        let params = quote_params(params)?;
        let stylesheet = stylesheet.to_owned();
        let (lane, permit) = self.lane(clip_xml.len())?;
        ask(lane, |reply| Job::Transform {
            stylesheet,
            clip_xml,
            params,
            output: Output::Html,
            reply,
            permit,
        })
        .await
    }

    /// RDF/XML of a clip with IRIs under `base` (uses RDF_STYLESHEET; `base` must be an absolute http(s) IRI without fragment, else BadParam).
    ///
    /// The result is checked to parse as RDF/XML: a stylesheet that wrote
    /// anything else gives [`RenderError::Rdf`].
    pub async fn rdf(&self, clip_xml: String, base: &str) -> Result<String, RenderError> {
        check_base(base)?;
        let params = vec![("base".to_owned(), xpath_literal(base))];
        let (lane, permit) = self.lane(clip_xml.len())?;
        ask(lane, |reply| Job::Transform {
            stylesheet: RDF_STYLESHEET.to_owned(),
            clip_xml,
            params,
            output: Output::Rdf,
            reply,
            permit,
        })
        .await
    }
}

/// Starts a lane: `threads` XSLT threads sharing one queue.
fn lane(dir: &Path, name: &str, threads: usize) -> mpsc::Sender<Job> {
    let (jobs, queue) = mpsc::channel(QUEUE_DEPTH);
    let queue = Arc::new(std::sync::Mutex::new(queue));
    for n in 0..threads {
        let dir = dir.to_owned();
        let queue = Arc::clone(&queue);
        // The worker (its stylesheets are not Send) is made on its thread.
        if let Err(error) = std::thread::Builder::new()
            .name(format!("semclip-xslt-{name}-{n}"))
            .spawn(move || {
                Worker {
                    dir,
                    stylesheets: HashMap::new(),
                }
                .run(&queue)
            })
        {
            tracing::error!(error = %crate::ErrorChain(&error), "cannot start an XSLT thread");
        }
    }
    jobs
}

/// Sends a job to a lane and waits for its answer.
async fn ask<T>(
    lane: &mpsc::Sender<Job>,
    job: impl FnOnce(oneshot::Sender<Result<T, RenderError>>) -> Job,
) -> Result<T, RenderError> {
    let (reply, answer) = oneshot::channel();
    lane.send(job(reply))
        .await
        .map_err(|_| RenderError::Stopped)?;
    answer.await.map_err(|_| RenderError::Stopped)?
}

/// Turtle with the same triples as an RDF/XML document (parsed with oxrdfxml, written with oxttl, prefixes rdf, xsd, sc declared).
pub fn turtle(rdf_xml: &str) -> Result<String, RenderError> {
    let write_error = |error: io::Error| RenderError::Rdf {
        cause: format!("cannot write turtle: {error}"),
    };
    let mut writer = TurtleSerializer::new()
        .with_prefix("rdf", RDF_NAMESPACE)
        .and_then(|s| s.with_prefix("xsd", XSD_NAMESPACE))
        .and_then(|s| s.with_prefix("sc", SC_NAMESPACE))
        .map_err(|error| RenderError::Rdf {
            cause: format!("bad prefix: {error}"),
        })?
        .for_writer(Vec::new());
    for triple in RdfXmlParser::new().for_slice(rdf_xml) {
        let triple = triple.map_err(|error| RenderError::Rdf {
            cause: format!("not valid rdf/xml: {error}"),
        })?;
        writer.serialize_triple(&triple).map_err(write_error)?;
    }
    let bytes = writer.finish().map_err(write_error)?;
    String::from_utf8(bytes).map_err(|error| RenderError::Rdf {
        cause: format!("turtle is not utf-8: {error}"),
    })
}

/// Tags a sanitized clip may hold: what `html.xsl` emits and harmless
/// formatting.
const ALLOWED_TAGS: &[&str] = &[
    "div",
    "span",
    "p",
    "a",
    "table",
    "caption",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "address",
    "code",
    "em",
    "strong",
    "br",
    "small",
    "abbr",
    "time",
];

/// Attributes allowed on every allowed tag. No `id` (foreign ids could
/// clobber the portal's DOM), no `style`, no event handlers.
const GENERIC_ATTRIBUTES: &[&str] = &[
    "class",
    "lang",
    "title",
    "data-xpath",
    "data-num",
    "data-watch",
    "data-clip",
    "data-col",
    "data-key",
];

/// Tags removed with everything inside them (not just unwrapped).
const CLEAN_CONTENT_TAGS: &[&str] = &[
    "script", "style", "iframe", "object", "embed", "svg", "math", "noscript", "template",
    "noembed", "noframes", "xmp",
];

/// The sanitizer: built once, configured explicitly (nothing left to
/// ammonia's defaults).
static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let tag_attributes = HashMap::from([
        ("a", HashSet::from(["href"])),
        ("th", HashSet::from(["scope", "colspan", "rowspan"])),
        ("td", HashSet::from(["colspan", "rowspan"])),
        ("time", HashSet::from(["datetime"])),
    ]);
    let mut builder = ammonia::Builder::empty();
    builder
        .tags(ALLOWED_TAGS.iter().copied().collect())
        .clean_content_tags(CLEAN_CONTENT_TAGS.iter().copied().collect())
        .generic_attributes(GENERIC_ATTRIBUTES.iter().copied().collect())
        .tag_attributes(tag_attributes)
        .tag_attribute_values(HashMap::new())
        .set_tag_attribute_values(HashMap::new())
        .allowed_classes(HashMap::new())
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        // A relative link would point into the portal, not at the page it
        // came from (html.xsl resolves them against the page's URL).
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow"))
        .strip_comments(true)
        .id_prefix(None);
    builder
});

/// The HTML sanitizer every HTML clip goes through (ammonia): returns safe HTML.
///
/// Keeps the tags of [`ALLOWED_TAGS`] with `class`, `lang`, `title` and the
/// `data-` attributes semclip writes; `a href` only for http, https and
/// mailto URLs (relative ones are dropped), with
/// `rel="noopener noreferrer nofollow"`; `th scope/colspan/rowspan`,
/// `td colspan/rowspan`, `time datetime`. Scripts, styles and embedded
/// content go with their contents; other tags are unwrapped; comments go.
pub fn sanitize(html: &str) -> String {
    SANITIZER.clean(html).to_string()
}

/// The XSLT thread's state: the directory and every stylesheet loaded.
struct Worker {
    dir: PathBuf,
    /// Parsed stylesheets by path (`dir` joined with the name), kept for
    /// the life of the process (libxslt's are never freed).
    stylesheets: HashMap<PathBuf, Stylesheet>,
}

impl Worker {
    /// Serves jobs until every sender is gone. The queue's lock is held
    /// only while waiting for the next job, never while rendering.
    fn run(mut self, queue: &std::sync::Mutex<mpsc::Receiver<Job>>) {
        loop {
            let next = lock(queue).blocking_recv();
            let Some(job) = next else { break };
            match job {
                Job::Check { name, reply } => {
                    if reply.is_closed() {
                        continue;
                    }
                    let result = self.guarded(&name, |w| w.load(&name).map(|_| ()));
                    // The asker may have gone meanwhile: nothing to do then.
                    let _ = reply.send(result);
                }
                Job::Transform {
                    stylesheet,
                    clip_xml,
                    params,
                    output,
                    reply,
                    permit,
                } => {
                    if reply.is_closed() {
                        continue;
                    }
                    let result = self.guarded(&stylesheet, |w| {
                        w.transform(&stylesheet, &clip_xml, &params, output)
                    });
                    // The room is given back before the answer goes.
                    drop(permit);
                    let _ = reply.send(result);
                }
            }
        }
        tracing::debug!("the XSLT thread stops: no renderer left");
    }

    /// Runs `f`, turning a panic into an error so the thread keeps serving.
    fn guarded<T>(
        &mut self,
        stylesheet: &str,
        f: impl FnOnce(&mut Self) -> Result<T, RenderError>,
    ) -> Result<T, RenderError> {
        catch_unwind(AssertUnwindSafe(|| f(self))).unwrap_or_else(|_| {
            tracing::error!(stylesheet, "a render job panicked");
            Err(RenderError::Transform {
                stylesheet: stylesheet.to_owned(),
                cause: "the xslt worker panicked on it".to_owned(),
            })
        })
    }

    /// The stylesheet `name`, parsed on first use.
    fn load(&mut self, name: &str) -> Result<&mut Stylesheet, RenderError> {
        check_name(name)?;
        match self.stylesheets.entry(self.dir.join(name)) {
            Entry::Occupied(entry) => Ok(entry.into_mut()),
            Entry::Vacant(entry) => {
                let stylesheet = parse_stylesheet(&self.dir, name, entry.key())?;
                tracing::info!(stylesheet = %entry.key().display(), "stylesheet loaded");
                Ok(entry.insert(stylesheet))
            }
        }
    }

    /// Runs stylesheet `name` over `clip_xml`; `params` are XPath expressions.
    fn transform(
        &mut self,
        name: &str,
        clip_xml: &str,
        params: &[(String, String)],
        output: Output,
    ) -> Result<String, RenderError> {
        let stylesheet = self.load(name)?;
        let input = parse_clip(clip_xml)?;
        let params: Vec<(&str, &str)> = params
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let result =
            stylesheet
                .transform(input, params)
                .map_err(|error| RenderError::Transform {
                    stylesheet: name.to_owned(),
                    cause: format!(
                        "{error} (libxslt writes its messages to the daemon's standard error)"
                    ),
                })?;
        match output {
            Output::Html => {
                // Serialized by HTML rules whatever the stylesheet's output
                // method, so `<td/>` cannot swallow its siblings when the
                // sanitizer parses it back.
                let html = result.to_string_with_options(SaveOptions {
                    as_html: true,
                    no_declaration: true,
                    ..SaveOptions::default()
                });
                Ok(sanitize(html.trim()))
            }
            Output::Rdf => {
                let xml = result.to_string_with_options(SaveOptions {
                    format: true,
                    ..SaveOptions::default()
                });
                check_rdf(&xml)?;
                Ok(xml)
            }
        }
    }
}

/// Refuses a stylesheet name that is not `[A-Za-z0-9._-]+\.xsl`.
fn check_name(name: &str) -> Result<(), RenderError> {
    let ok = name.len() > ".xsl".len()
        && name.len() <= MAX_NAME_BYTES
        && name.ends_with(".xsl")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(RenderError::Stylesheet {
            path: PathBuf::from(name),
            cause: "not a stylesheet name: a stylesheet is a file of the stylesheet directory \
                    named [A-Za-z0-9._-]+.xsl"
                .to_owned(),
        })
    }
}

/// Reads, checks and parses stylesheet `name` at `path` (in `dir`).
fn parse_stylesheet(dir: &Path, name: &str, path: &Path) -> Result<Stylesheet, RenderError> {
    let refuse = |cause: String| RenderError::Stylesheet {
        path: path.to_path_buf(),
        cause,
    };
    match std::fs::symlink_metadata(path) {
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(RenderError::UnknownStylesheet {
                name: name.to_owned(),
            });
        }
        Err(error) => return Err(refuse(format!("cannot read it: {error}"))),
    }
    let real_dir = dir.canonicalize().map_err(|error| {
        refuse(format!(
            "cannot resolve the stylesheet directory {}: {error}",
            dir.display()
        ))
    })?;
    let real = path
        .canonicalize()
        .map_err(|error| refuse(format!("cannot resolve it: {error}")))?;
    if !real.starts_with(&real_dir) {
        return Err(refuse(format!(
            "it resolves to {}, outside the stylesheet directory {}",
            real.display(),
            real_dir.display()
        )));
    }
    let meta =
        std::fs::metadata(&real).map_err(|error| refuse(format!("cannot read it: {error}")))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file".to_owned()));
    }
    if meta.len() > MAX_STYLESHEET_BYTES {
        return Err(refuse(format!(
            "larger than {} MiB",
            MAX_STYLESHEET_BYTES >> 20
        )));
    }
    let bytes = std::fs::read(&real).map_err(|error| refuse(format!("cannot read it: {error}")))?;
    let options = ParserOptions {
        recover: false,
        no_error: true,
        no_warning: true,
        no_net: true,
        ..ParserOptions::default()
    };
    let document = match Parser::default().parse_string_with_diagnostics(&bytes, options) {
        Ok((document, _warnings)) => document,
        Err(failure) => {
            return Err(refuse(format!(
                "not well-formed XML: {}",
                first_problem(failure)
            )));
        }
    };
    let root = document
        .get_root_element()
        .ok_or_else(|| refuse("not an XSLT stylesheet: no root element".to_owned()))?;
    let local = root.get_name();
    let namespace = root.get_namespace().map(|ns| ns.get_href());
    if !(matches!(local.as_str(), "stylesheet" | "transform")
        && namespace.as_deref() == Some(XSLT_NAMESPACE))
    {
        return Err(refuse(format!(
            "not an XSLT stylesheet: the root element is {{{}}}{local}, not xsl:stylesheet or \
             xsl:transform in {XSLT_NAMESPACE}",
            namespace.unwrap_or_default()
        )));
    }
    drop(document);
    let real_str = real
        .to_str()
        .ok_or_else(|| refuse("its path is not UTF-8".to_owned()))?;
    libxslt::parser::parse_file(real_str)
        .map_err(|error| refuse(format!("libxslt refused it: {error}")))
}

/// Parses the clip document: strict XML, read as UTF-8, no network.
fn parse_clip(xml: &str) -> Result<Document, RenderError> {
    let document = match Parser::default()
        .parse_string_with_diagnostics(xml, crate::xpath::strict_options())
    {
        Ok((document, _warnings)) => document,
        Err(failure) => {
            return Err(RenderError::Input {
                cause: first_problem(failure),
            });
        }
    };
    if document.get_root_element().is_none() {
        return Err(RenderError::Input {
            cause: "no root element".to_owned(),
        });
    }
    Ok(document)
}

/// libxml2's first complaint, with its line and column.
fn first_problem(failure: XmlParseFailure) -> String {
    let XmlParseFailure::ParseFailed(diagnostics) = failure else {
        return failure.to_string();
    };
    let Some(first) = diagnostics.first() else {
        return "libxml2 returned no document".to_owned();
    };
    let message = first
        .message
        .as_deref()
        .map_or("libxml2 gave no detail", str::trim);
    match (first.line, first.col) {
        (Some(line), Some(col)) => format!("line {line}, column {col}: {message}"),
        (Some(line), None) => format!("line {line}: {message}"),
        _ => message.to_owned(),
    }
}

/// Checks the client's parameters and turns their values into XPath
/// string literals.
fn quote_params(params: Vec<(String, String)>) -> Result<Vec<(String, String)>, RenderError> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut quoted = Vec::with_capacity(params.len());
    for (name, value) in &params {
        let bad = |reason: String| RenderError::BadParam {
            name: name.clone(),
            reason,
        };
        if !param_name_ok(name) {
            return Err(bad(
                "not a parameter name ([A-Za-z_][A-Za-z0-9_-]*)".to_owned()
            ));
        }
        if !HTML_PARAMS.contains(&name.as_str()) {
            return Err(bad(format!(
                "not a parameter clients may set (those are: {})",
                HTML_PARAMS.join(", ")
            )));
        }
        if !seen.insert(name) {
            return Err(bad("given more than once".to_owned()));
        }
        if value.contains('\0') {
            return Err(bad("the value holds a NUL byte".to_owned()));
        }
        if value.chars().count() > MAX_PARAM_CHARS {
            return Err(bad(format!(
                "the value is longer than {MAX_PARAM_CHARS} characters"
            )));
        }
        if !value.chars().all(xml_allowed) {
            return Err(bad(
                "the value holds a character XML does not allow".to_owned()
            ));
        }
        quoted.push((name.clone(), xpath_literal(value)));
    }
    Ok(quoted)
}

/// `[A-Za-z_][A-Za-z0-9_-]*`
fn param_name_ok(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Refuses a base that is not an absolute http(s) IRI without fragment.
fn check_base(base: &str) -> Result<(), RenderError> {
    let bad = |reason: &str| RenderError::BadParam {
        name: "base".to_owned(),
        reason: reason.to_owned(),
    };
    let lower = base.get(..8).unwrap_or(base).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(bad("not an absolute http(s) IRI"));
    }
    if base.contains('#') {
        return Err(bad("an IRI with a fragment cannot be a base"));
    }
    oxrdf::NamedNode::new(base)
        .map(|_| ())
        .map_err(|error| bad(&format!("not a valid IRI: {error}")))
}

/// Checks that `xml` parses as RDF/XML.
fn check_rdf(xml: &str) -> Result<(), RenderError> {
    for triple in RdfXmlParser::new().for_slice(xml) {
        triple.map_err(|error| RenderError::Rdf {
            cause: format!("the stylesheet wrote invalid rdf/xml: {error}"),
        })?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    use std::collections::HashSet;

    use libxml::tree::Node;
    use oxrdf::vocab::{rdf, xsd};
    use oxrdf::{Literal, NamedNode, NamedOrBlankNode, Term, Triple};
    use oxttl::TurtleParser;

    use crate::hierarchy::write::{XmlOptions, node_to_xml, to_xml};
    use crate::hierarchy::{HNode, Hierarchy, Kind};

    const BASE: &str = "http://127.0.0.1:8080/clips/quotes";
    const SOURCE: &str = "https://example.org/markets/quotes.html";

    fn xslt_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("xslt")
    }

    /// One renderer over the bundled stylesheets for all tests (each
    /// renderer keeps its own parsed stylesheets for good).
    fn renderer() -> Renderer {
        static SHARED: LazyLock<Renderer> = LazyLock::new(|| Renderer::start(xslt_dir()));
        SHARED.clone()
    }

    fn quotes() -> Hierarchy {
        let html =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("site/quotes.html"))
                .unwrap();
        Hierarchy::from_html(&html, Some(SOURCE))
    }

    fn find<'a>(nodes: &'a [HNode], f: &dyn Fn(&HNode) -> bool) -> Option<&'a HNode> {
        nodes
            .iter()
            .find_map(|n| if f(n) { Some(n) } else { find(&n.children, f) })
    }

    fn gazp(h: &Hierarchy) -> &HNode {
        find(&h.children, &|n| {
            n.kind == Kind::Row && n.key.as_deref() == Some("GAZP")
        })
        .unwrap()
    }

    fn gazp_last(h: &Hierarchy) -> &HNode {
        gazp(h)
            .children
            .iter()
            .find(|c| c.col.as_deref() == Some("Цена Last"))
            .unwrap()
    }

    fn gazp_clip(h: &Hierarchy) -> String {
        format!(
            "<clip watch=\"quotes\" name=\"gazp\" select=\"//row[@key='GAZP']\" count=\"1\" \
             version=\"2\" url=\"{SOURCE}\" xpath-base=\"/page\">\n{}</clip>\n",
            node_to_xml(gazp(h), true)
        )
    }

    fn esc(s: &str) -> String {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\t', "&#9;")
            .replace('\n', "&#10;")
            .replace('\r', "&#13;")
    }

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn parse_html(html: &str) -> Document {
        Parser::default_html()
            .parse_string(format!("<html><body>{html}</body></html>"))
            .unwrap()
    }

    fn elements(node: &Node, out: &mut Vec<Node>) {
        for child in node.get_child_elements() {
            out.push(child.clone());
            elements(&child, out);
        }
    }

    /// The rendered fragment's elements (below the html/body wrapper).
    fn fragment_elements(doc: &Document) -> Vec<Node> {
        let body = doc
            .get_root_element()
            .unwrap()
            .findnodes("//body")
            .unwrap()
            .remove(0);
        let mut out = Vec::new();
        elements(&body, &mut out);
        out
    }

    fn texts(doc: &Document, xpath: &str) -> Vec<String> {
        doc.get_root_element()
            .unwrap()
            .findnodes(xpath)
            .unwrap()
            .iter()
            .map(Node::get_content)
            .collect()
    }

    /// Everything a portal must never get, checked on the parsed fragment
    /// (as a browser would see it: entities decoded) and on the raw text.
    fn assert_clean(html: &str, what: &str) {
        let lower = html.to_ascii_lowercase();
        for tag in [
            "<script",
            "<iframe",
            "<svg",
            "<style",
            "<math",
            "<object",
            "<embed",
            "<img",
            "<base",
            "<meta",
            "<form",
            "<link",
            "<textarea",
            "<input",
        ] {
            assert!(!lower.contains(tag), "{what}: {tag} in {html}");
        }
        assert_no_handler_in_tags(html, what);
        let doc = parse_html(html);
        for element in fragment_elements(&doc) {
            let name = element.get_name().to_ascii_lowercase();
            assert!(
                ALLOWED_TAGS.contains(&name.as_str()),
                "{what}: tag <{name}> in {html}"
            );
            for (attribute, value) in element.get_properties() {
                let attribute = attribute.to_ascii_lowercase();
                assert!(
                    !attribute.starts_with("on"),
                    "{what}: {attribute} on <{name}> in {html}"
                );
                assert!(
                    attribute != "style" && attribute != "id",
                    "{what}: {attribute}= in {html}"
                );
                let allowed = GENERIC_ATTRIBUTES.contains(&attribute.as_str())
                    || matches!(
                        (name.as_str(), attribute.as_str()),
                        ("a", "href" | "rel")
                            | ("th", "scope" | "colspan" | "rowspan")
                            | ("td", "colspan" | "rowspan")
                            | ("time", "datetime")
                    );
                assert!(allowed, "{what}: {attribute} on <{name}> in {html}");
                if attribute == "href" {
                    // What a browser would follow: control characters and
                    // white space dropped, scheme case-folded.
                    let url: String = value
                        .chars()
                        .filter(|c| !c.is_ascii_whitespace() && !c.is_ascii_control())
                        .collect::<String>()
                        .to_ascii_lowercase();
                    for scheme in ["javascript:", "vbscript:", "data:"] {
                        assert!(!url.starts_with(scheme), "{what}: href {value} in {html}");
                    }
                    assert!(
                        url.starts_with("http://")
                            || url.starts_with("https://")
                            || url.starts_with("mailto:"),
                        "{what}: href {value} in {html}"
                    );
                    assert_eq!(
                        element.get_property("rel").as_deref(),
                        Some("noopener noreferrer nofollow"),
                        "{what}: {html}"
                    );
                }
            }
        }
    }

    /// A raw scan: inside tags (quoted values skipped), no attribute named
    /// `on...`. Outside tags every `<` of the sanitized text starts a tag.
    fn assert_no_handler_in_tags(html: &str, what: &str) {
        let mut in_tag = false;
        let mut quote: Option<char> = None;
        let mut name = String::new();
        for c in html.chars() {
            match (in_tag, quote) {
                (false, _) => in_tag = c == '<',
                (true, Some(q)) => {
                    if c == q {
                        quote = None;
                    }
                }
                (true, None) => match c {
                    '>' => {
                        in_tag = false;
                        name.clear();
                    }
                    '"' | '\'' => quote = Some(c),
                    c if c.is_ascii_alphanumeric() || c == '-' => name.push(c),
                    '=' => {
                        assert!(
                            !name.to_ascii_lowercase().starts_with("on"),
                            "{what}: {name}= in {html}"
                        );
                        name.clear();
                    }
                    _ => name.clear(),
                },
            }
        }
    }

    #[tokio::test]
    async fn html_renders_the_page_tables_with_ids() {
        let h = quotes();
        let xml = to_xml(&h, XmlOptions::default());
        let last = gazp_last(&h);
        let html = renderer()
            .html(HTML_STYLESHEET, xml, Vec::new())
            .await
            .unwrap();
        assert_clean(&html, "quotes page");
        let doc = parse_html(&html);
        assert_eq!(
            texts(&doc, "//div[@class='semclip-clip']/h2"),
            ["Котировки: Московская биржа"]
        );
        assert_eq!(texts(&doc, "//table/caption"), ["Shares"]);
        assert_eq!(
            texts(&doc, "//table/thead/tr/th"),
            ["Тикер", "Цена Last", "Цена Open", "Изм., %", "Объём, руб."]
        );
        let row = format!(
            "//table/tbody/tr[@data-xpath={}]",
            xpath_literal(&gazp(&h).xpath)
        );
        assert_eq!(texts(&doc, &format!("{row}/th[@scope='row']")), ["GAZP"]);
        assert_eq!(
            texts(&doc, &format!("{row}/td")),
            ["251,30", "249,10", "+0,88%", "1 234 567 890"]
        );
        let cells = doc
            .get_root_element()
            .unwrap()
            .findnodes(&format!("{row}/td[1]"))
            .unwrap();
        assert_eq!(
            cells[0].get_property("data-xpath").as_deref(),
            Some(last.xpath.as_str())
        );
        assert_eq!(cells[0].get_property("data-num").as_deref(), Some("251.3"));
        assert_eq!(
            cells[0].get_property("data-col").as_deref(),
            Some("Цена Last")
        );
        // Sections are headings under the h2 title, lists and terms keep
        // their shape, relative links point at the source site.
        assert_eq!(texts(&doc, "//h3"), ["Итоги торгов"]);
        assert_eq!(texts(&doc, "//h4"), ["Акции", "Облигации", "Словарь"]);
        assert_eq!(texts(&doc, "//dl/dt"), ["Last", "Open"]);
        assert_eq!(
            texts(&doc, "//dl/dd"),
            ["Цена последней сделки.", "Цена открытия."]
        );
        let links: Vec<String> = doc
            .get_root_element()
            .unwrap()
            .findnodes("//ul/li/a")
            .unwrap()
            .iter()
            .filter_map(|a| a.get_property("href"))
            .collect();
        assert_eq!(
            links,
            [
                "https://example.org/",
                "https://example.org/shares",
                "https://example.org/bonds"
            ]
        );
        assert_eq!(
            texts(&doc, "//address/a[@href='mailto:press@example.ru']"),
            ["Пресс-служба: press@example.ru"]
        );
        // Every data-xpath names a node of the input.
        let mut ids = HashSet::new();
        fn collect(nodes: &[HNode], ids: &mut HashSet<String>) {
            for n in nodes {
                ids.insert(n.xpath.clone());
                collect(&n.children, ids);
            }
        }
        collect(&h.children, &mut ids);
        ids.insert("/page".to_owned());
        for e in fragment_elements(&doc) {
            if let Some(id) = e.get_property("data-xpath") {
                assert!(ids.contains(&id), "{id}");
            }
        }
    }

    #[tokio::test]
    async fn html_renders_a_clip_of_rows_and_relative_links() {
        let h = quotes();
        let html = renderer()
            .html(HTML_STYLESHEET, gazp_clip(&h), Vec::new())
            .await
            .unwrap();
        assert_clean(&html, "gazp clip");
        let doc = parse_html(&html);
        let root = &fragment_elements(&doc)[0];
        assert_eq!(root.get_property("class").as_deref(), Some("semclip-clip"));
        assert_eq!(root.get_property("data-watch").as_deref(), Some("quotes"));
        assert_eq!(root.get_property("data-clip").as_deref(), Some("gazp"));
        assert_eq!(texts(&doc, "//h2"), ["gazp"]);
        assert_eq!(
            texts(&doc, "//table/thead/tr/th"),
            ["", "Цена Last", "Цена Open", "Изм., %", "Объём, руб."]
        );
        assert_eq!(
            texts(&doc, "//td[@data-num='251.3']/@data-xpath"),
            [gazp_last(&h).xpath.as_str()]
        );

        // Orphan cells, items and an empty clip.
        let clip = format!(
            "<clip watch=\"w\" name=\"bits\" select=\"//cell\" count=\"3\" url=\"{SOURCE}\">\
             <cell col=\"A\" num=\"1\" xpath=\"/page/table[1]/row[1]/cell[@col='A']\">1</cell>\
             <item href=\"../other/page.html?x=1\" xpath=\"/page/list[1]/item[1]\">rel</item>\
             <item href=\"#top\" xpath=\"/page/list[1]/item[2]\">frag</item>\
             <item href=\"//cdn.example.net/x\" xpath=\"/page/list[1]/item[3]\">proto</item>\
             </clip>"
        );
        let html = renderer()
            .html(HTML_STYLESHEET, clip, Vec::new())
            .await
            .unwrap();
        assert_clean(&html, "bits clip");
        let doc = parse_html(&html);
        assert_eq!(texts(&doc, "//table/tbody/tr/th"), ["A"]);
        assert_eq!(texts(&doc, "//table/tbody/tr/td[@data-num='1']"), ["1"]);
        assert_eq!(
            texts(&doc, "//ul/li/a/@href"),
            [
                "https://example.org/markets/../other/page.html?x=1",
                "https://example.org/markets/quotes.html#top",
                "https://cdn.example.net/x"
            ]
        );
        // With no http(s) page to resolve against, a relative link is text.
        let page = "<page label=\"local\" url=\"file:///tmp/quotes.html\" xpath=\"/page\">\
                    <list xpath=\"/page/list[1]\"><item href=\"/shares\" xpath=\"/page/list[1]/item[1]\">rel</item>\
                    <item href=\"https://example.org/abs\" xpath=\"/page/list[1]/item[2]\">abs</item></list></page>";
        let html = renderer()
            .html(HTML_STYLESHEET, page.to_owned(), Vec::new())
            .await
            .unwrap();
        assert!(
            html.contains("<li data-xpath=\"/page/list[1]/item[1]\">rel</li>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<a href=\"https://example.org/abs\" rel=\"noopener noreferrer nofollow\">abs</a>"
            ),
            "{html}"
        );
        let empty = "<clip watch=\"w\" name=\"none\" select=\"//nothing\" count=\"0\"/>";
        let html = renderer()
            .html(HTML_STYLESHEET, empty.to_owned(), Vec::new())
            .await
            .unwrap();
        assert_eq!(
            html,
            "<div class=\"semclip-clip\" data-watch=\"w\" data-clip=\"none\">\
             <h2 class=\"semclip-title\">none</h2></div>"
        );
    }

    /// Hostile strings: each goes into text, labels, keys, columns, hrefs
    /// and parameters of a clip, and straight into the sanitizer.
    const PAYLOADS: &[&str] = &[
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<svg onload=alert(1)>",
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "  javascript:alert(1)",
        "\t\n javascript:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        "&#106;avascript:alert(1)",
        "&#x6A;avascript:alert(1)",
        "&#0000106&#0000097vascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "vbscript:msgbox(1)",
        "<a href=\"java\tscript:alert(1)\">x</a>",
        "<a href=\"&#106;avascript:alert(1)\">x</a>",
        "<a href=\"  JAVASCRIPT:alert(1)\">x</a>",
        "<div style=\"background:url(javascript:alert(1))\">x</div>",
        "<p style=\"width: expression(alert(1))\">x</p>",
        "<iframe src=\"javascript:alert(1)\"></iframe>",
        "<object data=\"javascript:alert(1)\"></object>",
        "<embed src=\"data:text/html,x\">",
        "<math><mi xlink:href=\"javascript:alert(1)\">x</mi></math>",
        "\"><script>alert(1)</script>",
        "'><script>alert(1)</script>",
        "</textarea><script>alert(1)</script>",
        "</title><script>alert(1)</script>",
        "<!--<script>alert(1)</script>-->",
        "<style>@import 'http://evil.example/x.css';</style>",
        "<base href=\"javascript:alert(1)//\">",
        "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
        "<form action=\"javascript:alert(1)\"><input type=submit></form>",
        "x\" onmouseover=\"alert(1)",
        "x' onmouseover='alert(1)",
        "<b onmouseover=alert(1)>x</b>",
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "&amp;lt;script&amp;gt;alert(1)",
        "<scr<script>ipt>alert(1)</script>",
        "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
        "<a href=\"data:text/html,x\" onclick=\"alert(1)\" id=\"login\">x</a>",
        "<div id=\"portal-login\" class=\"x\" data-evil=\"1\">x</div>",
        "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\"></noscript>",
        "<template><script>alert(1)</script></template>",
        "<svg><style><img src=x onerror=alert(1)></style></svg>",
    ];

    /// A page holding every payload in every place a string can go.
    fn hostile_page() -> String {
        let mut xml = format!(
            "<page label=\"{}\" url=\"{SOURCE}\" lang=\"en\" version=\"2\" xpath=\"/page\">",
            esc(PAYLOADS[0])
        );
        for (i, payload) in PAYLOADS.iter().enumerate() {
            let p = esc(payload);
            let s = format!("/page/section[{}]", i + 1);
            xml.push_str(&format!(
                "<section label=\"{p}\" level=\"1\" xpath=\"{p}\">\
                 <text href=\"{p}\" xpath=\"{s}/text[1]\">{p}</text>\
                 <text label=\"{p}\" href=\"{p}\" xpath=\"{p}\"><pre xpath=\"{p}\">{p}</pre></text>\
                 <list xpath=\"{p}\"><item href=\"{p}\" num=\"{p}\" xpath=\"{p}\">{p}</item>\
                 <item label=\"{p}\" xpath=\"{s}/list[1]/item[2]\"><list xpath=\"{p}\">\
                 <item xpath=\"{p}\">{p}</item></list></item></list>\
                 <table label=\"{p}\" keycol=\"{p}\" xpath=\"{p}\">\
                 <row key=\"{p}\" xpath=\"{p}\"><cell col=\"{p}\" num=\"{p}\" href=\"{p}\" xpath=\"{p}\">{p}</cell>\
                 <cell xpath=\"{s}/table[1]/row[1]/cell[2]\">{p}</cell></row>\
                 <row key=\"{p} label\" xpath=\"{p}\"/></table>\
                 <terms xpath=\"{p}\"><term label=\"{p}\" href=\"{p}\" xpath=\"{p}\">\
                 <def href=\"{p}\" xpath=\"{p}\">{p}</def></term></terms>\
                 <address href=\"{p}\" xpath=\"{p}\">{p}</address>\
                 <quote xpath=\"{p}\">{p}</quote><keywords xpath=\"{p}\">{p}</keywords>\
                 <gadget xpath=\"{p}\">{p}</gadget>\
                 </section>"
            ));
        }
        xml.push_str("</page>");
        xml
    }

    #[tokio::test]
    async fn html_output_is_clean_whatever_the_page_holds() {
        let r = renderer();
        let page = hostile_page();
        let html = r
            .html(HTML_STYLESHEET, page.clone(), Vec::new())
            .await
            .unwrap();
        assert_clean(&html, "hostile page");
        // The payloads are there, as text.
        let doc = parse_html(&html);
        let shown = texts(&doc, "//p[@data-xpath='/page/section[1]/text[1]']");
        assert_eq!(shown, [PAYLOADS[0]]);
        // Safe links survive (so the check above is not vacuous).
        assert!(
            html.contains("rel=\"noopener noreferrer nofollow\""),
            "{html}"
        );

        // The same payloads as a clip's names and as parameters.
        for payload in PAYLOADS {
            let clip = format!(
                "<clip watch=\"{p}\" name=\"{p}\" select=\"{p}\" count=\"1\" url=\"{p}\">\
                 <item href=\"{p}\" xpath=\"{p}\">{p}</item><cell col=\"{p}\" href=\"{p}\" xpath=\"{p}\">{p}</cell>\
                 <row key=\"{p}\" xpath=\"{p}\"><cell col=\"{p}\" xpath=\"{p}\">{p}</cell></row></clip>",
                p = esc(payload)
            );
            let html = r
                .html(
                    HTML_STYLESHEET,
                    clip,
                    params(&[
                        ("title", payload),
                        ("lang", payload),
                        ("show-caption", payload),
                    ]),
                )
                .await
                .unwrap();
            assert_clean(&html, payload);
        }
    }

    #[test]
    fn sanitize_alone_catches_raw_payloads() {
        for payload in PAYLOADS {
            assert_clean(&sanitize(payload), payload);
            let wrapped = format!(
                "<div class=\"semclip-clip\"><p>{payload}</p><a href=\"{payload}\">l</a></div>"
            );
            assert_clean(&sanitize(&wrapped), &wrapped);
        }
        let all = PAYLOADS.concat();
        assert_clean(&sanitize(&all), "all payloads");
        // What stays and what goes, exactly.
        assert_eq!(
            sanitize(
                "<div id=\"a\" style=\"color:red\" class=\"c\" data-xpath=\"/p\" data-evil=\"1\" \
                 onclick=\"x()\">t<script>alert(1)</script><style>p{}</style></div>"
            ),
            "<div class=\"c\" data-xpath=\"/p\">t</div>"
        );
        assert_eq!(
            sanitize("<a href=\"https://example.org/x\" target=\"_top\" rel=\"opener\">x</a>"),
            "<a href=\"https://example.org/x\" rel=\"noopener noreferrer nofollow\">x</a>"
        );
        assert_eq!(
            sanitize("<a href=\"/portal/admin\">x</a><a href=\"javascript:alert(1)\">y</a>"),
            "<a rel=\"noopener noreferrer nofollow\">x</a><a rel=\"noopener noreferrer nofollow\">y</a>"
        );
        assert_eq!(
            sanitize(
                "<table><tr><th scope=\"row\" colspan=\"2\" width=\"9\">k</th><td rowspan=\"2\">v</td></tr></table>"
            ),
            "<table><tbody><tr><th scope=\"row\" colspan=\"2\">k</th><td rowspan=\"2\">v</td></tr></tbody></table>"
        );
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    const HOSTILE_XSL: &str = r#"<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html"/>
  <xsl:template match="/">
    <div id="portal-login">
      <xsl:element name="script">alert(1)</xsl:element>
      <xsl:element name="a">
        <xsl:attribute name="href">javascript:alert(2)</xsl:attribute>
        <xsl:attribute name="onclick">alert(3)</xsl:attribute>
        <xsl:text>visible link</xsl:text>
      </xsl:element>
      <p style="color:red" onmouseover="alert(4)">visible paragraph</p>
      <xsl:text disable-output-escaping="yes">&lt;script&gt;alert(5)&lt;/script&gt;&lt;img src=x onerror=alert(6)&gt;&lt;svg onload=alert(7)&gt;&lt;/svg&gt;&lt;iframe src="javascript:alert(8)"&gt;&lt;/iframe&gt;&lt;a href="vbscript:x" onmouseover="alert(9)"&gt;v&lt;/a&gt;</xsl:text>
      <xsl:value-of select="//text" disable-output-escaping="yes"/>
      <xsl:element name="style">body { display: none }</xsl:element>
    </div>
  </xsl:template>
</xsl:stylesheet>
"#;

    #[tokio::test]
    async fn a_hostile_stylesheet_is_sanitized() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "evil.xsl", HOSTILE_XSL);
        let r = Renderer::start(dir.path().to_path_buf());
        let clip = "<clip watch=\"w\" name=\"n\" count=\"1\"><text xpath=\"/page/text[1]\">\
                    &lt;script&gt;alert(10)&lt;/script&gt;&lt;b onclick=\"alert(11)\"&gt;copied&lt;/b&gt;</text></clip>";
        let html = r
            .html("evil.xsl", clip.to_owned(), Vec::new())
            .await
            .unwrap();
        assert_clean(&html, "hostile stylesheet");
        // The transform ran (its harmless parts are there), the scripts'
        // contents are gone, the markup copied through is defused.
        for kept in ["visible link", "visible paragraph", "copied"] {
            assert!(html.contains(kept), "{kept}: {html}");
        }
        for gone in ["alert(1)", "alert(5)", "alert(10)", "display: none"] {
            assert!(!html.contains(gone), "{gone}: {html}");
        }
    }

    #[tokio::test]
    async fn params_are_strings_never_expressions() {
        let r = renderer();
        let clip = gazp_clip(&quotes());
        for title in [
            "it's",
            "say \"hi\"",
            "it's \"both\"",
            "') or true() or ('",
            "\") or true() or (\"",
            "concat('a', \"'\", 'b')",
            "$title",
            "/clip/@name",
            "<b>bold</b> & more",
            "Котировки",
        ] {
            let html = r
                .html(HTML_STYLESHEET, clip.clone(), params(&[("title", title)]))
                .await
                .unwrap();
            let doc = parse_html(&html);
            assert_eq!(texts(&doc, "//h2"), [title], "{html}");
        }
        // A value of exactly 256 characters is fine.
        let long = "я".repeat(256);
        let html = r
            .html(HTML_STYLESHEET, clip.clone(), params(&[("title", &long)]))
            .await
            .unwrap();
        assert!(html.contains(&long));
        // The other parameters do what they say.
        let html = r
            .html(
                HTML_STYLESHEET,
                to_xml(&quotes(), XmlOptions::default()),
                params(&[("show-caption", "no"), ("lang", "ru-RU"), ("decimal", ",")]),
            )
            .await
            .unwrap();
        assert!(!html.contains("<caption"), "{html}");
        assert!(
            html.starts_with("<div class=\"semclip-clip\" data-xpath=\"/page\" lang=\"ru-RU\">"),
            "{html}"
        );

        let too_long = "x".repeat(257);
        for (name, value) in [
            ("foo", "x"),
            ("1title", "x"),
            ("ti tle", "x"),
            ("title'", "x"),
            ("", "x"),
            ("title", "a\0b"),
            ("title", too_long.as_str()),
            ("title", "bell\u{7}"),
        ] {
            let error = r
                .html(HTML_STYLESHEET, clip.clone(), params(&[(name, value)]))
                .await
                .unwrap_err();
            assert!(
                matches!(&error, RenderError::BadParam { name: n, .. } if n == name),
                "{name}: {error}"
            );
        }
        let error = r
            .html(
                HTML_STYLESHEET,
                clip.clone(),
                params(&[("title", "a"), ("title", "b")]),
            )
            .await
            .unwrap_err();
        assert!(matches!(error, RenderError::BadParam { .. }), "{error}");
    }

    #[tokio::test]
    #[expect(
        clippy::too_many_lines,
        reason = "one test walks every way a stylesheet name is refused"
    )]
    async fn stylesheet_names_and_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let good = std::fs::read_to_string(xslt_dir().join(HTML_STYLESHEET)).unwrap();
        write(dir.path(), "good.xsl", &good);
        write(outside.path(), "secret.xsl", &good);
        std::os::unix::fs::symlink(
            outside.path().join("secret.xsl"),
            dir.path().join("escape.xsl"),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("folder.xsl")).unwrap();
        write(dir.path(), "plain.xsl", "<root><child/></root>");
        write(
            dir.path(),
            "other-ns.xsl",
            "<stylesheet xmlns=\"http://example.org/not-xslt\" version=\"1.0\"/>",
        );
        write(
            dir.path(),
            "malformed.xsl",
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">",
        );
        write(
            dir.path(),
            "bad-xpath.xsl",
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\
             <xsl:template match=\"/\"><xsl:value-of select=\"(((\"/></xsl:template></xsl:stylesheet>",
        );
        write(
            dir.path(),
            "bad-pattern.xsl",
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\
             <xsl:template match=\"[[\"/></xsl:stylesheet>",
        );
        write(dir.path(), "empty.xsl", "");
        let r = Renderer::start(dir.path().to_path_buf());
        r.check("good.xsl").await.unwrap();
        // Twice: the second time from the loaded set.
        r.check("good.xsl").await.unwrap();

        for name in [
            "../etc/passwd",
            "/etc/x.xsl",
            "a/b.xsl",
            "..",
            ".xsl",
            "good.xsl\0",
            "good.XSL",
            "good.xsl ",
            "good.xslt",
            "",
        ] {
            let error = r.check(name).await.unwrap_err();
            assert!(
                matches!(&error, RenderError::Stylesheet { cause, .. } if cause.contains("not a stylesheet name")),
                "{name:?}: {error}"
            );
            let error = r
                .html(name, "<page/>".to_owned(), Vec::new())
                .await
                .unwrap_err();
            assert!(matches!(error, RenderError::Stylesheet { .. }), "{name:?}");
        }
        for (name, expected) in [
            ("escape.xsl", "outside the stylesheet directory"),
            ("folder.xsl", "not a regular file"),
            ("plain.xsl", "not an XSLT stylesheet"),
            ("other-ns.xsl", "not an XSLT stylesheet"),
            ("malformed.xsl", "not well-formed XML"),
            ("empty.xsl", "not well-formed XML"),
            ("bad-xpath.xsl", "libxslt refused it"),
            ("bad-pattern.xsl", "libxslt refused it"),
        ] {
            let error = r.check(name).await.expect_err(name);
            assert!(
                matches!(&error, RenderError::Stylesheet { cause, .. } if cause.contains(expected)),
                "{name}: {error}"
            );
        }
        let error = r.check("missing.xsl").await.unwrap_err();
        assert!(
            matches!(&error, RenderError::UnknownStylesheet { name } if name == "missing.xsl"),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "unknown stylesheet `missing.xsl`: no such file in the stylesheet directory"
        );
        // After all that the worker still renders.
        let html = r
            .html(
                "good.xsl",
                "<page label=\"ok\" xpath=\"/page\"/>".to_owned(),
                Vec::new(),
            )
            .await
            .unwrap();
        assert!(
            html.contains("<h2 class=\"semclip-title\">ok</h2>"),
            "{html}"
        );
        // A clip that is not XML is an input error.
        let error = r
            .html("good.xsl", "<page><oops></page>".to_owned(), Vec::new())
            .await
            .unwrap_err();
        assert!(matches!(error, RenderError::Input { .. }), "{error}");
    }

    /// The server awaits these in handlers that must be `Send`.
    #[test]
    fn futures_are_send() {
        fn send<T: Send>(_: &T) {}
        let r = renderer();
        send(&r.check(HTML_STYLESHEET));
        send(&r.html(HTML_STYLESHEET, String::new(), Vec::new()));
        send(&r.rdf(String::new(), BASE));
        send(&r);
    }

    #[tokio::test]
    async fn the_worker_survives_a_failing_transform() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "die.xsl",
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\
             <xsl:template match=\"/\"><xsl:message terminate=\"yes\">stop here</xsl:message></xsl:template>\
             </xsl:stylesheet>",
        );
        write(
            dir.path(),
            "ok.xsl",
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\
             <xsl:template match=\"/\"><p><xsl:value-of select=\"/*/@label\"/></p></xsl:template>\
             </xsl:stylesheet>",
        );
        // libxslt compiles an unknown XSLT element and fails on it at run time.
        write(
            dir.path(),
            "unknown.xsl",
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\
             <xsl:template match=\"/\"><xsl:frobnicate/></xsl:template></xsl:stylesheet>",
        );
        let r = Renderer::start(dir.path().to_path_buf());
        let clip = "<page label=\"still here\" xpath=\"/page\"/>";
        let unknown = r.html("unknown.xsl", clip.to_owned(), Vec::new()).await;
        assert!(
            matches!(unknown, Ok(_) | Err(RenderError::Transform { .. })),
            "{unknown:?}"
        );
        for _ in 0..3 {
            let error = r
                .html("die.xsl", clip.to_owned(), Vec::new())
                .await
                .unwrap_err();
            assert!(
                matches!(&error, RenderError::Transform { stylesheet, .. } if stylesheet == "die.xsl"),
                "{error}"
            );
            let html = r.html("ok.xsl", clip.to_owned(), Vec::new()).await.unwrap();
            assert_eq!(html, "<p>still here</p>");
        }
        // Concurrent askers all get their answer.
        let jobs: Vec<_> = (0..8)
            .map(|i| {
                let r = r.clone();
                tokio::spawn(async move {
                    let clip = format!("<page label=\"n{i}\" xpath=\"/page\"/>");
                    r.html("ok.xsl", clip, Vec::new()).await
                })
            })
            .collect();
        for (i, job) in jobs.into_iter().enumerate() {
            assert_eq!(job.await.unwrap().unwrap(), format!("<p>n{i}</p>"));
        }
    }

    fn iri(s: &str) -> NamedNode {
        NamedNode::new(s).unwrap()
    }

    fn sc(local: &str) -> NamedNode {
        iri(&format!("{SC_NAMESPACE}{local}"))
    }

    /// What `{base}#` + the id becomes: every byte percent-encoded but
    /// ASCII letters, digits and `-_.!~*()`.
    fn expected_fragment(xpath: &str) -> String {
        xpath
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.!~*()".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    }

    fn node_iri(xpath: &str) -> NamedNode {
        iri(&format!("{BASE}#{}", expected_fragment(xpath)))
    }

    fn triples(rdf_xml: &str) -> HashSet<Triple> {
        RdfXmlParser::new()
            .for_slice(rdf_xml)
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn objects(set: &HashSet<Triple>, subject: &NamedNode, predicate: &NamedNode) -> Vec<Term> {
        set.iter()
            .filter(|t| {
                t.subject == NamedOrBlankNode::NamedNode(subject.clone())
                    && t.predicate == *predicate
            })
            .map(|t| t.object.clone())
            .collect()
    }

    #[tokio::test]
    async fn rdf_of_a_clip() {
        let h = quotes();
        let row = gazp(&h);
        let last = gazp_last(&h);
        let rdf_xml = renderer().rdf(gazp_clip(&h), BASE).await.unwrap();
        let set = triples(&rdf_xml);
        let clip = iri(BASE);
        let row_iri = node_iri(&row.xpath);
        let last_iri = node_iri(&last.xpath);
        assert_eq!(
            objects(&set, &clip, &rdf::TYPE.into_owned()),
            [Term::from(sc("Clip"))]
        );
        assert_eq!(
            objects(&set, &clip, &sc("member")),
            [Term::from(row_iri.clone())]
        );
        assert_eq!(
            objects(&set, &clip, &sc("watch")),
            [Term::from(Literal::new_simple_literal("quotes"))]
        );
        assert_eq!(
            objects(&set, &clip, &sc("select")),
            [Term::from(Literal::new_simple_literal(
                "//row[@key='GAZP']"
            ))]
        );
        assert_eq!(
            objects(&set, &clip, &sc("count")),
            [Term::from(Literal::new_typed_literal("1", xsd::INTEGER))]
        );
        assert_eq!(objects(&set, &clip, &sc("url")), [Term::from(iri(SOURCE))]);
        assert!(set.contains(&Triple::new(
            last_iri.clone(),
            sc("num"),
            Literal::new_typed_literal("251.3", xsd::DECIMAL)
        )));
        assert!(set.contains(&Triple::new(last_iri.clone(), rdf::TYPE, sc("Cell"))));
        assert!(set.contains(&Triple::new(row_iri.clone(), rdf::TYPE, sc("Row"))));
        assert!(set.contains(&Triple::new(
            last_iri.clone(),
            sc("parent"),
            row_iri.clone()
        )));
        assert!(set.contains(&Triple::new(
            last_iri.clone(),
            sc("position"),
            Literal::new_typed_literal("1", xsd::INTEGER)
        )));
        assert!(set.contains(&Triple::new(
            last_iri.clone(),
            sc("value"),
            Literal::new_simple_literal("251,30")
        )));
        assert!(set.contains(&Triple::new(
            last_iri.clone(),
            sc("xpath"),
            Literal::new_simple_literal(&last.xpath)
        )));
        assert!(set.contains(&Triple::new(
            last_iri,
            sc("col"),
            Literal::new_simple_literal("Цена Last")
        )));
        assert!(set.contains(&Triple::new(
            row_iri.clone(),
            sc("key"),
            Literal::new_simple_literal("GAZP")
        )));
        // The top (the selected row) has no parent or position.
        assert!(objects(&set, &row_iri, &sc("parent")).is_empty());
        assert!(objects(&set, &row_iri, &sc("position")).is_empty());
        // Fragments hold only unreserved characters and %XX.
        for t in &set {
            if let NamedOrBlankNode::NamedNode(s) = &t.subject
                && let Some((_, fragment)) = s.as_str().split_once('#')
            {
                assert!(
                    fragment
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.!~*()%".contains(&b)),
                    "{fragment}"
                );
            }
        }

        // Turtle has exactly the same triples.
        let ttl = turtle(&rdf_xml).unwrap();
        assert!(
            ttl.contains("@prefix sc: <https://semclip.dev/ns/hierarchy/1#>"),
            "{ttl}"
        );
        assert!(
            ttl.contains("@prefix xsd: <http://www.w3.org/2001/XMLSchema#>"),
            "{ttl}"
        );
        let back: HashSet<Triple> = TurtleParser::new()
            .for_slice(&ttl)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, set);
    }

    /// Links and what `sc:href` makes of them: an IRI (percent-encoded where
    /// needed) or, when it cannot be an absolute http(s) IRI, the literal.
    const HREFS: &[(&str, Option<&str>)] = &[
        ("https://example.org/a b", Some("https://example.org/a%20b")),
        (
            "https://пример.рф/путь?q=я#ф",
            Some(
                "https://%D0%BF%D1%80%D0%B8%D0%BC%D0%B5%D1%80.%D1%80%D1%84/\
                 %D0%BF%D1%83%D1%82%D1%8C?q=%D1%8F#%D1%84",
            ),
        ),
        (
            "https://example.org/x?a=1&b=<2>",
            Some("https://example.org/x?a=1&b=%3C2%3E"),
        ),
        (
            "HTTPS://Example.org:8443/%41?x#y",
            Some("HTTPS://Example.org:8443/%41?x#y"),
        ),
        (
            "https://example.org/\"quoted\" <tag>",
            Some("https://example.org/%22quoted%22%20%3Ctag%3E"),
        ),
        ("https://example.org/100%", None),
        ("https://example.org/%zz", None),
        ("https://example.org/#a#b", None),
        ("http://a:b/", None),
        ("http://user@example.org/", None),
        ("http://[::1]/", None),
        ("http://", None),
        ("javascript:alert(1)", None),
        ("/relative/path", None),
        ("mailto:a@example.org", None),
    ];

    #[tokio::test]
    async fn rdf_of_a_page_keeps_every_string_exactly() {
        let strange = "He said \"hi\" & <b>'x'</b> — Привет ]]> \t tab";
        let lit = |s: &str| Term::from(Literal::new_simple_literal(s));
        let xml = format!(
            "<page label=\"{l}\" url=\"{SOURCE}\" lang=\"ru\" version=\"2\" xpath=\"/page\">\
             <section label=\"{l}\" level=\"2\" xpath=\"/page/section[@label={q}]\">\
             <table label=\"{l}\" xpath=\"/page/section[@label={q}]/table[1]\">\
             <row key=\"{l}\" xpath=\"/page/section[@label={q}]/table[1]/row[1]\">\
             <cell col=\"{l}\" xpath=\"/page/section[@label={q}]/table[1]/row[1]/cell[1]\">{l}</cell></row></table>\
             <list xpath=\"/page/section[@label={q}]/list[1]\">{items}</list></section></page>",
            l = esc(strange),
            q = esc(&xpath_literal(strange)),
            items = HREFS
                .iter()
                .enumerate()
                .map(|(i, (href, _))| format!(
                    "<item href=\"{}\" xpath=\"/page/list[1]/item[{}]\">link</item>",
                    esc(href),
                    i + 1
                ))
                .collect::<String>(),
        );
        let rdf_xml = renderer().rdf(xml, BASE).await.unwrap();
        let set = triples(&rdf_xml);
        let page = node_iri("/page");
        assert!(set.contains(&Triple::new(page.clone(), rdf::TYPE, sc("Page"))));
        assert_eq!(objects(&set, &page, &sc("label")), [lit(strange)]);
        assert_eq!(objects(&set, &page, &sc("lang")), [lit("ru")]);
        assert_eq!(objects(&set, &page, &sc("url")), [Term::from(iri(SOURCE))]);
        let section_xpath = format!("/page/section[@label={}]", xpath_literal(strange));
        let section = node_iri(&section_xpath);
        assert_eq!(objects(&set, &section, &sc("label")), [lit(strange)]);
        assert_eq!(objects(&set, &section, &sc("xpath")), [lit(&section_xpath)]);
        assert_eq!(
            objects(&set, &section, &sc("level")),
            [Term::from(Literal::new_typed_literal("2", xsd::INTEGER))]
        );
        assert_eq!(
            objects(&set, &section, &sc("parent")),
            [Term::from(page.clone())]
        );
        let row = node_iri(&format!("{section_xpath}/table[1]/row[1]"));
        assert_eq!(objects(&set, &row, &sc("key")), [lit(strange)]);
        let cell = node_iri(&format!("{section_xpath}/table[1]/row[1]/cell[1]"));
        assert_eq!(objects(&set, &cell, &sc("col")), [lit(strange)]);
        assert_eq!(objects(&set, &cell, &sc("value")), [lit(strange)]);
        let list = node_iri(&format!("{section_xpath}/list[1]"));
        assert!(set.contains(&Triple::new(
            list,
            sc("position"),
            Literal::new_typed_literal("2", xsd::INTEGER)
        )));

        for (i, (href, as_iri)) in HREFS.iter().enumerate() {
            let item = node_iri(&format!("/page/list[1]/item[{}]", i + 1));
            let expected = match as_iri {
                Some(target) => Term::from(iri(target)),
                None => lit(href),
            };
            assert_eq!(objects(&set, &item, &sc("href")), [expected], "{href}");
        }

        let back: HashSet<Triple> = TurtleParser::new()
            .for_slice(&turtle(&rdf_xml).unwrap())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, set);
    }

    #[tokio::test]
    async fn rdf_numbers_are_typed_by_their_form() {
        let nums = [
            ("-1234.56", Some(xsd::DECIMAL)),
            ("0", Some(xsd::DECIMAL)),
            (".5", Some(xsd::DECIMAL)),
            ("+7", Some(xsd::DECIMAL)),
            ("1e5", Some(xsd::DOUBLE)),
            ("-2.5E-3", Some(xsd::DOUBLE)),
            ("INF", Some(xsd::DOUBLE)),
            ("NaN", Some(xsd::DOUBLE)),
            ("1.2.3", None),
            ("-", None),
            ("12 345", None),
            ("e5", None),
            ("", None),
        ];
        let items: String = nums
            .iter()
            .enumerate()
            .map(|(i, (n, _))| {
                format!(
                    "<item num=\"{n}\" xpath=\"/page/list[1]/item[{}]\">v</item>",
                    i + 1
                )
            })
            .collect();
        let xml =
            format!("<page xpath=\"/page\"><list xpath=\"/page/list[1]\">{items}</list></page>");
        let set = triples(&renderer().rdf(xml, BASE).await.unwrap());
        for (i, (n, datatype)) in nums.iter().enumerate() {
            let item = node_iri(&format!("/page/list[1]/item[{}]", i + 1));
            let expected = match datatype {
                Some(d) => Literal::new_typed_literal(*n, *d),
                None => Literal::new_simple_literal(*n),
            };
            assert_eq!(
                objects(&set, &item, &sc("num")),
                [Term::from(expected)],
                "{n}"
            );
        }
    }

    #[tokio::test]
    async fn rdf_refuses_bad_bases_and_inputs() {
        let r = renderer();
        for base in [
            "",
            "relative/path",
            "ftp://example.org/x",
            "javascript:alert(1)",
            "http://example.org/x#frag",
            "http://exa mple.org/",
            "http://example.org/<x>",
            "urn:x:y",
        ] {
            let error = r
                .rdf("<page xpath=\"/page\"/>".to_owned(), base)
                .await
                .unwrap_err();
            assert!(
                matches!(&error, RenderError::BadParam { name, .. } if name == "base"),
                "{base}: {error}"
            );
        }
        // A base with a quote is passed as a string, not an expression.
        let base = "https://example.org/it's";
        let set = triples(
            &r.rdf("<page xpath=\"/page\"/>".to_owned(), base)
                .await
                .unwrap(),
        );
        assert!(set.contains(&Triple::new(
            iri("https://example.org/it's#%2Fpage"),
            rdf::TYPE,
            sc("Page")
        )));
        let error = r.rdf("not xml".to_owned(), BASE).await.unwrap_err();
        assert!(matches!(error, RenderError::Input { .. }), "{error}");
        let error =
            turtle("<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\"><oops")
                .unwrap_err();
        assert!(matches!(error, RenderError::Rdf { .. }), "{error}");
    }
}
