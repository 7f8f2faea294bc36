// Doorman's console: the little it needs beyond HTML. Copy buttons, a confirmation before
// forms that stop or remove something, and times in the browser's own zone. Everything works
// without it (times then stay in UTC).
"use strict";
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  if (!field) return;
  field.select();
  const done = () => { button.textContent = "Copied"; };
  if (navigator.clipboard) {
    navigator.clipboard.writeText(field.value).then(done, () => document.execCommand("copy") && done());
  } else if (document.execCommand("copy")) {
    done();
  }
});
document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// Every time the server wrote (`<time datetime="…Z" title="… UTC">… UTC</time>`, page.rs's
// `Time`) said in this browser's zone, as the server says it (`2026-12-01 15:30:00`, to the
// millisecond when the server gave them) and the zone's short name; the title keeps the UTC.
const pad = (n, width = 2) => String(n).padStart(width, "0");
const zoneOf = (at) => {
  const part = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" })
    .formatToParts(at)
    .find((p) => p.type === "timeZoneName");
  return part ? part.value : "";
};
for (const time of document.querySelectorAll("time[datetime]")) {
  const utc = time.getAttribute("datetime");
  const at = new Date(utc);
  if (Number.isNaN(at.getTime())) continue;
  const date = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`;
  let clock = `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  if (utc.includes(".")) clock += `.${pad(at.getMilliseconds(), 3)}`;
  time.textContent = `${date} ${clock} ${zoneOf(at)}`.trim();
}
