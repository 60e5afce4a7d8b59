//! The exchange board the source papers are about: about 300 issuers x 10
//! values, about 64 KB, inside a realistic page (navigation, styles,
//! scripts, a footer). Shared by the cost example, the daemon benchmark's
//! fixture site and tests (included with `#[path]`).
//!
//! `markup` re-renders the same data with other markup (extra wrappers,
//! other classes, inline elements around values, other scripts and
//! styles): a change that must raise nothing. `changed` alters that many
//! cells, spread over the board.

use std::fmt::Write as _;

/// The board page with `rows` issuers, markup variant `markup` (0 or 1)
/// and `changed` cells altered.
#[allow(
    clippy::too_many_lines,
    reason = "writes one page top to bottom, its markup variants side by side"
)]
pub(crate) fn board_page(rows: usize, markup: usize, changed: usize) -> String {
    let alt = markup % 2 == 1;
    let mut s = String::with_capacity(rows * 240 + 8192);
    s.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    s.push_str("<title>Equities board</title>");
    if alt {
        s.push_str("<link rel=\"stylesheet\" href=\"/static/board.v2.css\"><style>.b td{padding:1px 4px}.up{color:#0a0}.dn{color:#a00}</style>");
        s.push_str("<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());</script>");
    } else {
        s.push_str("<link rel=\"stylesheet\" href=\"/static/board.css\"><style>table.q td{padding:2px}</style>");
        s.push_str("<script>var refreshEvery=30000;setTimeout(function(){location.reload()},refreshEvery);</script>");
    }
    s.push_str("</head><body>");
    if alt {
        s.push_str("<div class=\"page\"><div class=\"page__inner\">");
    }
    s.push_str("<header><nav><ul>");
    for (i, name) in [
        "Markets",
        "Equities",
        "Bonds",
        "Currencies",
        "Derivatives",
        "Indices",
        "News",
        "Calendar",
        "Research",
        "Contacts",
    ]
    .iter()
    .enumerate()
    {
        let class = if alt { " class=\"nav__link\"" } else { "" };
        let _ = write!(s, "<li><a{class} href=\"/section/{i}\">{name}</a></li>");
    }
    s.push_str("</ul></nav></header><main>");
    s.push_str("<h1>Equities</h1><p>Prices are delayed by 15 minutes.</p>");
    if alt {
        s.push_str("<div class=\"board-wrap\"><div class=\"scroll\">");
    }
    let class = if alt { "b board" } else { "q" };
    let _ = write!(
        s,
        "<table class=\"{class}\"><caption>Main board</caption><thead><tr>"
    );
    for c in [
        "Code", "Last", "Change", "Change %", "Open", "High", "Low", "Volume", "Trades", "Time",
    ] {
        let _ = write!(s, "<th>{c}</th>");
    }
    s.push_str("</tr></thead><tbody>");
    let changed_at = |r: usize, c: usize| {
        (0..changed).any(|k| (k * 97 + 13) % rows.max(1) == r && 1 + (k * 5) % 9 == c)
    };
    for r in 0..rows {
        let seed = (r * 104_729 + 7919) % 100_000;
        let last = 10.0 + (seed % 9000) as f64 / 7.0;
        let change = (seed % 400) as f64 / 100.0 - 2.0;
        let values = [
            format!("{last:.2}"),
            format!("{change:+.2}"),
            format!("{:+.2}%", change / last * 100.0),
            format!("{:.2}", last - change),
            format!("{:.2}", last + 1.5),
            format!("{:.2}", last - 1.5),
            format!("{}", 1000 + seed % 90_000),
            format!("{}", 10 + seed % 500),
            format!("{:02}:{:02}", 10 + r % 8, r % 60),
        ];
        if alt {
            let _ = write!(
                s,
                "<tr class=\"{}\"><td class=\"code\"><a href=\"/q/T{r:04}\"><b>T{r:04}</b></a></td>",
                if change >= 0.0 { "up" } else { "dn" }
            );
        } else {
            let _ = write!(s, "<tr><td><a href=\"/q/T{r:04}\">T{r:04}</a></td>");
        }
        for (c, v) in values.iter().enumerate() {
            let v = if changed_at(r, c + 1) {
                format!("{v}1")
            } else {
                v.clone()
            };
            if alt {
                let _ = write!(s, "<td><span>{v}</span></td>");
            } else {
                let _ = write!(s, "<td>{v}</td>");
            }
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    if alt {
        s.push_str("</div></div>");
    }
    s.push_str(
        "</main><footer><p>Data: the exchange. <a href=\"/terms\">Terms of use</a></p></footer>",
    );
    if alt {
        s.push_str("</div></div><script src=\"/static/app.v2.js\" defer></script>");
    } else {
        s.push_str("<script src=\"/static/app.js\"></script>");
    }
    s.push_str("</body></html>");
    s
}
