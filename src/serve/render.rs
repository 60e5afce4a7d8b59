//! stub
#![allow(missing_docs, unused)]
use std::path::PathBuf;
pub const HTML_STYLESHEET: &str = "html.xsl";
pub const RDF_STYLESHEET: &str = "rdf.xsl";
pub const HTML_PARAMS: &[&str] = &["title", "show-caption", "decimal", "lang"];
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("x")]
    BadParam { name: String, reason: String },
    #[error("y")]
    Stopped,
}
#[derive(Clone, Debug)]
pub struct Renderer;
impl Renderer {
    pub fn start(dir: PathBuf) -> Renderer {
        Renderer
    }
    pub async fn check(&self, name: &str) -> Result<(), RenderError> {
        Ok(())
    }
    pub async fn html(
        &self,
        stylesheet: &str,
        clip_xml: String,
        params: Vec<(String, String)>,
    ) -> Result<String, RenderError> {
        Ok(String::new())
    }
    pub async fn rdf(&self, clip_xml: String, base: &str) -> Result<String, RenderError> {
        Ok(String::new())
    }
}
pub fn turtle(rdf_xml: &str) -> Result<String, RenderError> {
    Ok(String::new())
}
pub fn sanitize(html: &str) -> String {
    String::new()
}
