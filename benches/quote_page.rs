//! A generated exchange quote page: markets x issuers x quote values inside
//! a layout table with navigation, scripts and presentational markup, as
//! exchange sites of the seeds' era were built. Shared by the benchmark and
//! the tests (included with `#[path]`).

use std::fmt::Write as _;

/// Builds a quote page of `markets` tables of `rows` issuers and 10 values.
pub(crate) fn quote_page(markets: usize, rows: usize) -> String {
    quote_page_revision(markets, rows, 0, 0)
}

/// The same page at a later `revision`: about `changed_pct` percent of the
/// values differ from revision 0 (which cells is fixed by the numbers).
pub(crate) fn quote_page_revision(
    markets: usize,
    rows: usize,
    revision: usize,
    changed_pct: usize,
) -> String {
    let mut s = String::with_capacity(markets * rows * 900);
    s.push_str("<!DOCTYPE html><html lang=\"ru\"><head><meta charset=\"utf-8\"><title>Котировки ценных бумаг</title>");
    s.push_str("<meta name=\"keywords\" content=\"акции, облигации, котировки\"><style>td{padding:2px}</style>");
    s.push_str("<script>var ticker = setInterval(function(){ refresh('<b>x</b>'); }, 5000);</script></head><body>");
    s.push_str("<table width=\"100%\" class=\"layout\"><tr><td class=\"nav\" valign=\"top\"><ul>");
    for i in 0..20 {
        let _ = write!(s, "<li><a href=\"/section/{i}\">Раздел {i}</a></li>");
    }
    s.push_str("</ul></td><td class=\"main\"><div class=\"content\"><h1>Торги</h1><p>Данные обновляются каждые 5 минут.</p>");
    let columns = [
        "Код",
        "Послед.",
        "Изм.",
        "Изм. %",
        "Откр.",
        "Макс.",
        "Мин.",
        "Объём",
        "Сделок",
        "Время",
    ];
    for m in 0..markets {
        let _ = write!(
            s,
            "<h2>Рынок {m}</h2><div class=\"wrap\"><table class=\"quotes\" id=\"m{m}\"><thead><tr>"
        );
        for c in columns {
            let _ = write!(s, "<th class=\"h\"><span>{c}</span></th>");
        }
        s.push_str("</tr></thead><tbody>");
        for r in 0..rows {
            let seed = (m * 7919 + r * 104_729) % 100_000;
            let last = 100.0 + (seed % 9000) as f64 / 7.0;
            let change = (seed % 400) as f64 / 100.0 - 2.0;
            let _ = write!(
                s,
                "<tr class=\"{}\" data-id=\"{m}-{r}\"><td class=\"ticker\"><a href=\"/q/T{m}{r:04}\" title=\"Эмитент {r}\"><b>T{m}{r:04}</b></a></td>",
                if r % 2 == 0 { "even" } else { "odd" }
            );
            let values = [
                format!("{last:.2}").replace('.', ","),
                format!("{change:+.2}").replace('.', ","),
                format!("{:+.2}%", change / last * 100.0).replace('.', ","),
                format!("{:.2}", last - change).replace('.', ","),
                format!("{:.2}", last + 1.5).replace('.', ","),
                format!("{:.2}", last - 1.5).replace('.', ","),
                format!("{} {:03}", 1 + seed % 900, seed % 1000),
                format!("{}", 10 + seed % 5000),
                format!("{:02}:{:02}", 10 + r % 8, r % 60),
            ];
            for (i, v) in values.iter().enumerate() {
                let mixed = (m * 31 + r * 17 + i * 7 + revision * 13) % 100;
                let v = if revision > 0 && mixed < changed_pct {
                    format!("{v}1")
                } else {
                    v.clone()
                };
                let class = if change >= 0.0 { "up" } else { "down" };
                let _ = write!(
                    s,
                    "<td class=\"num {class} c{i}\" style=\"text-align:right\"><font color=\"#333\">{v}</font></td>"
                );
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table></div>");
    }
    s.push_str("</div></td></tr><tr><td colspan=\"2\" class=\"footer\"><address>Биржа, <a href=\"mailto:info@example.ru\">info@example.ru</a></address></td></tr></table>");
    s.push_str("<script>document.querySelectorAll('tr').forEach(function(r){ r.onclick = null; });</script></body></html>");
    s
}
