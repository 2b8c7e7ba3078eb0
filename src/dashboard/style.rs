//! The dashboard's stylesheet and its one script, served from this site
//! (`/static/dashboard.css`, `/static/dashboard.js`): status colours shared by badges, charts
//! and the timeline, a layout that reads on a phone. The script follows the timeline's
//! server-sent events and writes with `textContent` only.

/// `GET /static/dashboard.css`.
pub const CSS: &str = r#":root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#fff;--panel:#f6f8fa;
--good:#1a7f37;--bad:#cf222e;--warn:#9a6700;--run:#0969da;--idle:#8c959f;--plan:#8250df}
*{box-sizing:border-box}
body{overflow-wrap:break-word;font:15px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0}
header{background:#24292f;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:1rem;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:600}header .brand{font-size:1.1rem;margin-right:1rem}
header form{margin-left:auto}header button{background:transparent;color:#fff;border:1px solid #57606a;border-radius:6px;padding:.2rem .7rem;cursor:pointer}
main{max-width:76rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.4rem 0}h2{font-size:1.15rem;margin:1.4rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.25rem}h3{font-size:1rem;margin:.6rem 0 .3rem}
a{color:var(--run)}code{background:var(--panel);border-radius:4px;padding:0 .25rem;font-size:.9em}
pre{background:var(--panel);border-radius:6px;padding:.6rem;overflow-x:auto;font-size:.85em}
table{border-collapse:collapse;width:100%;display:block;overflow-x:auto}
td,th{border-bottom:1px solid var(--line);padding:.4rem .6rem;text-align:left;vertical-align:top}th{background:var(--panel);font-weight:600}
.muted{color:var(--muted)}.error{color:var(--bad)}.ok{color:var(--good)}.crumbs{margin:0;color:var(--muted)}
form.inline{display:inline}button{font:inherit;border:1px solid var(--line);border-radius:6px;background:var(--panel);padding:.25rem .8rem;cursor:pointer}
input,select{font:inherit;padding:.25rem .4rem;border:1px solid var(--line);border-radius:6px;max-width:100%}
.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end;margin:.5rem 0}
.badge{display:inline-block;white-space:nowrap;border-radius:2em;padding:0 .6rem;font-size:.85em;font-weight:600;color:#fff;background:var(--idle)}
.badge.st-Completed{background:var(--good)}.badge.st-Failed,.badge.st-HumanNeeded{background:var(--bad)}.badge.st-Blocked{background:var(--warn)}
.badge.st-InProgress,.badge.st-AwaitingVerification{background:var(--run)}.badge.st-Preparing,.badge.st-Validating{background:var(--plan)}
.markdown table{display:block;width:max-content;max-width:100%;overflow-x:auto}.markdown ul{padding-left:1.2rem}.markdown li{list-style:none}.markdown li input{margin-right:.4rem}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(20rem,1fr));gap:1rem}
.card{border:1px solid var(--line);border-radius:8px;padding:.2rem 1rem 1rem}.card h2{border:0}
dl{display:grid;grid-template-columns:auto auto;gap:.2rem 1rem}dd{margin:0;font-weight:600}
svg.chart{width:100%;height:auto;max-width:48rem;display:block;font-size:11px}svg.grid{width:auto;max-width:100%}
svg text.lane{fill:var(--fg)}svg text.axis,svg text.value{fill:var(--muted)}
rect.span,rect.bar,rect.col,rect.cell{fill:var(--idle)}
rect.r-architect{fill:var(--plan)}rect.r-breaker{fill:#bf3989}rect.r-builder{fill:var(--run)}rect.r-critic{fill:#bc4c00}
rect.r-architect,rect.r-breaker,rect.r-builder,rect.r-critic{opacity:.9}rect.open{opacity:.5}
rect.g-gates{fill:#57606a}rect.g-red_proof{fill:var(--bad)}
rect.st-Completed,rect.s-passed{fill:var(--good)}rect.st-Failed,rect.st-HumanNeeded,rect.s-failed{fill:var(--bad)}rect.st-Blocked{fill:var(--warn)}
rect.st-InProgress,rect.st-AwaitingVerification{fill:var(--run)}rect.st-Preparing,rect.st-Validating{fill:var(--plan)}rect.s-skipped,rect.st-Pending{fill:var(--idle)}
.legend .key{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;vertical-align:middle;background:var(--idle)}
.legend .s-passed{background:var(--good)}.legend .s-failed{background:var(--bad)}
#timeline section.stage{border-left:3px solid var(--line);padding-left:.8rem;margin:.4rem 0}
#timeline section.current{border-left-color:var(--run);background:#f1f8ff}
#timeline ol{list-style:none;margin:0;padding:0}#timeline li{padding:.1rem 0;display:flex;gap:.6rem}
#timeline li time{color:var(--muted);font-variant-numeric:tabular-nums;flex:none}#timeline details{min-width:0}
#timeline summary{cursor:pointer}#timeline .t-good summary{color:var(--good)}#timeline .t-bad summary{color:var(--bad)}#timeline .t-quiet summary{color:var(--muted);font-size:.9em}
#timeline section.current li:last-child summary{font-weight:600}
@media (max-width:40rem){main{padding:.6rem}h1{font-size:1.25rem}td,th{padding:.3rem}header{gap:.6rem}}
"#;

/// `GET /static/dashboard.js`: the live timeline.
pub const SCRIPT: &str = r#"(function () {
  const box = document.getElementById('timeline');
  if (!box || !window.EventSource) return;
  const source = new EventSource('/tickets/' + box.dataset.key + '/events?after=' + box.dataset.after);
  source.addEventListener('timeline', function (msg) {
    const e = JSON.parse(msg.data);
    if (e.kind === 'state' && e.data && e.data.to) {
      const st = document.getElementById('state');
      if (st) { st.textContent = e.stage || e.data.to; st.className = 'badge st-' + e.data.to; }
    }
    const s = e.sentence;
    if (!s) return;
    let group = box.querySelector('section.stage:last-of-type');
    if (s.starts || !group) {
      if (group) group.classList.remove('current');
      group = document.createElement('section');
      group.className = 'stage current';
      const h = document.createElement('h3');
      h.textContent = s.starts || 'Started';
      group.appendChild(h);
      group.appendChild(document.createElement('ol'));
      box.appendChild(group);
    }
    if (e.kind === 'state' && (e.data.to === 'Completed' || e.data.to === 'Failed')) {
      group.classList.remove('current');
    }
    const li = document.createElement('li');
    li.className = 't-' + s.tone;
    li.dataset.id = e.id;
    li.dataset.kind = e.kind;
    const time = document.createElement('time');
    time.textContent = new Date(e.at).toISOString().slice(11, 19);
    const details = document.createElement('details');
    const summary = document.createElement('summary');
    summary.textContent = s.text;
    const pre = document.createElement('pre');
    pre.textContent = JSON.stringify(e.data, null, 2);
    details.appendChild(summary);
    details.appendChild(pre);
    li.appendChild(time);
    li.appendChild(details);
    group.querySelector('ol').appendChild(li);
  });
})();
"#;
