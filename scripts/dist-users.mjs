// Which test files need dist/ built (scripts/test.mjs builds it only for them). A file does when
// what it runs reaches
// - test/cli.ts (cliEntry, cliCommand): the nbagent CLI as a process, which runs the bundle the
//   runner hands over in NBAGENT_TEST_CLI; or
// - a path into this checkout's dist/: a string with a "dist" path segment and no node_modules in it
//   (the view page, the install tests' `npm pack`, the security tests' copy of the package).
//
// Found statically with TypeScript's parser, name by name, through the test helpers (files under
// test/; src/ never reaches them): an imported name counts only when its top-level declaration
// reaches one of the two, itself or through the declarations and imports it names. A test that
// takes tempDir() from test/run/helpers.ts does not need dist/; one that takes nbagent() does.
// A file's own top-level code all counts (it all runs), and so does the top-level code (not a
// declaration) of every module it imports. Over-counting is the safe side: a name that merely
// looks the same (a property, a shadowing local) counts; only a build is lost.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const CLI = "test/cli.ts";
const DIST_PATH = /(^|\/)dist(\/|$)/;

/**
 * For each file (paths relative to `root`), the reason it needs dist/ — what it uses, as a chain
 * such as `nbagent (test/run/helpers.ts) → spawnNbagent (test/run/helpers.ts) → cliEntry
 * (test/cli.ts)` or `the path "dist/cli/nbagent.js"` — or undefined when it does not.
 */
export function distUsers(files, root = process.cwd()) {
  const modules = new Map();
  const memo = new Map();

  function parsed(path) {
    let m = modules.get(path);
    if (!m) {
      m = parse(path, root);
      modules.set(path, m);
    }
    return m;
  }

  const inProgress = new Set();
  let cuts = 0;
  /**
   * Memoized and cycle-safe: a question already being answered further up counts as no reason
   * there, and a "no" reached through such a cut is not kept (asked again later, it may be "yes").
   */
  function once(key, compute) {
    if (memo.has(key)) return memo.get(key);
    if (inProgress.has(key)) {
      cuts++;
      return undefined;
    }
    inProgress.add(key);
    const before = cuts;
    const r = compute();
    inProgress.delete(key);
    if (r !== undefined || cuts === before) memo.set(key, r);
    return r;
  }

  /** Why module `path`'s export `name` needs dist/. */
  function exportReason(path, name) {
    if (path === CLI) return `${name} (${CLI})`;
    return once(`export ${path} ${name}`, () => {
      const m = parsed(path);
      const e = m.exports.get(name);
      if (e?.from) return exportReason(e.from, e.name);
      if (e) return localReason(path, e.local);
      for (const from of m.starExports) {
        const r = exportReason(from, name);
        if (r) return r;
      }
      return undefined;
    });
  }

  /** Why anything module `path` exports, or its top-level code, needs dist/. */
  function anyReason(path) {
    if (path === CLI) return `${CLI}`;
    return once(`any ${path}`, () => {
      const m = parsed(path);
      for (const name of [...m.exports.keys()]) {
        const r = exportReason(path, name);
        if (r) return r;
      }
      for (const from of m.starExports) {
        const r = anyReason(from);
        if (r) return r;
      }
      return codeReason(path);
    });
  }

  /** Why a top-level name of module `path` (declared there or imported) needs dist/. */
  function localReason(path, local) {
    return once(`local ${path} ${local}`, () => {
      const m = parsed(path);
      const imp = m.imports.get(local);
      if (imp) return imp.name === "*" ? anyReason(imp.from) : exportReason(imp.from, imp.name);
      const d = m.decls.get(local);
      if (!d) return undefined;
      const r = statementReason(path, d, local);
      return r && `${local} (${path}) → ${r}`;
    });
  }

  /** A statement's own reason: a dist/ path in it, or a name it uses that has one. */
  function statementReason(path, s, self) {
    if (s.dist) return `the path "${s.dist}"`;
    for (const from of s.dynamicImports) {
      const r = anyReason(from);
      if (r) return r;
    }
    const m = parsed(path);
    for (const ref of s.refs) {
      if (ref === self || (!m.imports.has(ref) && !m.decls.has(ref))) continue;
      const r = localReason(path, ref);
      if (r) return r;
    }
    return undefined;
  }

  /** Why the top-level code (not the declarations) of `path`, or of a module it imports, needs dist/. */
  function codeReason(path) {
    if (path === CLI) return undefined;
    return once(`code ${path}`, () => {
      const m = parsed(path);
      for (const s of m.code) {
        const r = statementReason(path, s);
        if (r) return `the top-level code of ${path} → ${r}`;
      }
      for (const from of m.imported) {
        const r = codeReason(from);
        if (r) return r;
      }
      return undefined;
    });
  }

  /** A test file: all of its top-level statements run. */
  function fileReason(path) {
    const m = parsed(path);
    for (const s of [...m.decls.values(), ...m.code]) {
      const r = statementReason(path, s);
      if (r) return r;
    }
    for (const from of m.imported) {
      const r = codeReason(from);
      if (r) return r;
    }
    return undefined;
  }

  return new Map(files.map((f) => [f, fileReason(f)]));
}

/** One module's top level: its imports, declarations, exports and other code. */
function parse(path, root) {
  const text = readFileSync(join(root, path), "utf8");
  const kind = path.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, kind);
  const m = {
    imports: new Map(), // local name → { from, name } (name "*": the whole module)
    decls: new Map(), // local name → statement facts
    exports: new Map(), // exported name → { local } or { from, name }
    starExports: [],
    imported: new Set(), // every module it imports (their top-level code runs)
    code: [], // top-level statements that are not declarations
  };
  const target = (node) => {
    if (!node || !ts.isStringLiteral(node)) return undefined;
    return resolveTest(path, node.text, root);
  };
  const exported = (node) => node.modifiers?.some((x) => x.kind === ts.SyntaxKind.ExportKeyword);
  const isDefault = (node) => node.modifiers?.some((x) => x.kind === ts.SyntaxKind.DefaultKeyword);

  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st)) {
      const from = target(st.moduleSpecifier);
      const clause = st.importClause;
      if (!from || clause?.isTypeOnly) continue;
      m.imported.add(from);
      if (clause?.name) m.imports.set(clause.name.text, { from, name: "default" });
      const nb = clause?.namedBindings;
      if (nb && ts.isNamespaceImport(nb)) m.imports.set(nb.name.text, { from, name: "*" });
      else if (nb)
        for (const el of nb.elements)
          if (!el.isTypeOnly) m.imports.set(el.name.text, { from, name: (el.propertyName ?? el.name).text });
    } else if (ts.isExportDeclaration(st)) {
      if (st.isTypeOnly) continue;
      const from = st.moduleSpecifier ? target(st.moduleSpecifier) : undefined;
      if (st.moduleSpecifier && !from) continue;
      if (from) m.imported.add(from);
      const clause = st.exportClause;
      if (!clause) m.starExports.push(from);
      else if (ts.isNamespaceExport(clause)) m.exports.set(clause.name.text, { from, name: "*" });
      else
        for (const el of clause.elements) {
          if (el.isTypeOnly) continue;
          const inner = (el.propertyName ?? el.name).text;
          m.exports.set(el.name.text, from ? { from, name: inner } : { local: inner });
        }
    } else if (ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st) || ts.isEnumDeclaration(st)) {
      const name = st.name?.text ?? "default";
      m.decls.set(name, facts(st, path, root));
      if (exported(st)) m.exports.set(isDefault(st) ? "default" : name, { local: name });
    } else if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) {
        const f = facts(d.initializer, path, root);
        for (const name of bindingNames(d.name)) {
          m.decls.set(name, f);
          if (exported(st)) m.exports.set(name, { local: name });
        }
      }
    } else if (ts.isExportAssignment(st)) {
      m.decls.set("default", facts(st.expression, path, root));
      m.exports.set("default", { local: "default" });
    } else if (ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) {
      // types do not run
    } else m.code.push(facts(st, path, root));
  }
  return m;
}

/** What a statement (or expression) uses: the names in it, dynamic imports, a dist/ path. */
function facts(node, path, root) {
  const f = { refs: new Set(), dynamicImports: [], dist: undefined };
  const visit = (n) => {
    if (ts.isIdentifier(n)) f.refs.add(n.text);
    else if (ts.isStringLiteralLike(n) || ts.isTemplateLiteralToken(n)) {
      if (f.dist === undefined && DIST_PATH.test(n.text) && !n.text.includes("node_modules")) f.dist = n.text;
    } else if (
      ts.isCallExpression(n) &&
      n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments[0] &&
      ts.isStringLiteral(n.arguments[0])
    ) {
      const from = resolveTest(path, n.arguments[0].text, root);
      if (from) f.dynamicImports.push(from);
    }
    ts.forEachChild(n, visit);
  };
  if (node) visit(node);
  return f;
}

function bindingNames(name) {
  if (ts.isIdentifier(name)) return [name.text];
  return name.elements.flatMap((el) => (ts.isOmittedExpression(el) ? [] : bindingNames(el.name)));
}

/** A relative import of a file under test/, as a path relative to root (.js → its .ts); else undefined. */
function resolveTest(from, specifier, root) {
  if (!specifier.startsWith(".")) return undefined;
  let p = relative(root, resolve(root, dirname(from), specifier));
  if (p.endsWith(".js") && existsSync(join(root, p.replace(/\.js$/, ".ts")))) p = p.replace(/\.js$/, ".ts");
  if (!p.startsWith("test/") || !existsSync(join(root, p))) return undefined;
  return p;
}
