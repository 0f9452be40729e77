/**
 * Syntax highlighting by highlight.js (already the CLI's, src/render/highlight.ts), with the
 * languages notebooks mostly hold registered one by one so the bundle carries only those. Its
 * output is spans with `hljs-*` classes (coloured by page.css) around escaped text: no styles, no
 * scripts, so it goes into the DOM as HTML safely.
 */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import cpp from "highlight.js/lib/languages/cpp";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import julia from "highlight.js/lib/languages/julia";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import r from "highlight.js/lib/languages/r";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

for (const [name, lang] of Object.entries({
  bash,
  cpp,
  javascript,
  json,
  julia,
  markdown,
  python,
  r,
  sql,
  typescript,
  xml,
  yaml,
}))
  hljs.registerLanguage(name, lang);
hljs.registerAliases(["sh", "shell"], { languageName: "bash" });
hljs.registerAliases(["ipython", "ipython3", "py"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });

/** Escaped HTML of the code, highlighted when the language is one registered here. */
export function highlightHtml(code: string, language: string | undefined): string {
  const lang = language?.toLowerCase();
  if (lang && hljs.getLanguage(lang))
    return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  return escapeHtml(code);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
