// promptfoo 0.121.20's markup and SQL assertions (is-xml, contains-xml, is-html, is-sql,
// contains-sql), run for coalmine's worker (node_worker.js, op "check") on the very packages
// promptfoo runs them with: their verdicts come from those packages' grammars, which no
// Python library matches. The handlers below are promptfoo's own code (MIT), unchanged but
// for where the packages come from: the config's folder (its node_modules), promptfoo's own
// install, NODE_PATH.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");
const { pathToFileURL } = require("node:url");

class MissingPackage extends Error {}

const loaded = new Map();

async function loadPackage(name, dirs) {
  const key = `${name}\n${dirs.join("\n")}`;
  if (loaded.has(key)) return loaded.get(key);
  let resolved;
  for (const dir of dirs) {
    try {
      resolved = createRequire(path.join(dir, "__coalmine__.js")).resolve(name);
      break;
    } catch {}
  }
  if (!resolved) {
    throw new MissingPackage(
      `needs the npm package ${name} (which promptfoo installs): install promptfoo, or run ` +
      `'npm install ${name}' in the config's folder`);
  }
  const mod = await import(pathToFileURL(resolved).href);
  loaded.set(key, mod);
  return mod;
}

let parse$1;
let SaxesParser;
let XMLParser;
let sqlParserModule;

const coerceString = (value) => (typeof value === "string" ? value : JSON.stringify(value));

const LITERAL_WRAPPER_PATTERNS = {
	html: /<html(?=[\s>/])/,
	head: /<head(?=[\s>/])/,
	body: /<body(?=[\s>/])/
};
function isWrapperTagName(tagName) {
	return tagName === "html" || tagName === "head" || tagName === "body";
}
function isTextNode(node) {
	return node.nodeName === "#text";
}
function isElementNode(node) {
	return "tagName" in node;
}
function hasSourceCodeLocation(element) {
	return "sourceCodeLocation" in element && element.sourceCodeLocation !== null && element.sourceCodeLocation !== void 0;
}
function getChildNodes(node) {
	return "childNodes" in node ? node.childNodes : [];
}
function findFirstElement(root, predicate) {
	const stack = [root];
	while (stack.length > 0) {
		const current = stack.pop();
		if (isElementNode(current) && predicate(current)) return current;
		const children = getChildNodes(current);
		for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
	}
}
function hasTopLevelText(parentNode) {
	return parentNode.childNodes.some((node) => isTextNode(node) && Boolean(node.value.trim()));
}
function isUserProvidedElement(element, inputLowercase) {
	const tagName = element.tagName.toLowerCase();
	if (isWrapperTagName(tagName)) return LITERAL_WRAPPER_PATTERNS[tagName].test(inputLowercase) && hasSourceCodeLocation(element);
	return VALID_HTML_ELEMENTS.has(tagName) || tagName.includes("-");
}
const HTML_PATTERNS = {
	openingTag: /<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>/,
	closingTag: /<\/[a-zA-Z][a-zA-Z0-9-]*\s*>/,
	selfClosingTag: /<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?\/>/,
	htmlEntity: /&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);/,
	doctype: /<!DOCTYPE\s+html/i,
	htmlComment: /<!--[^-]*(?:-[^-]+)*-->/,
	htmlAttribute: /\s[a-zA-Z-]+=\s*["'][^"']*["']/
};
const MAX_INPUT_SIZE = 10 * 1024 * 1024;
function containsHtml(text) {
	if (text.length > MAX_INPUT_SIZE) return false;
	let htmlIndicators = 0;
	const hasOpening = HTML_PATTERNS.openingTag.test(text);
	const hasClosing = HTML_PATTERNS.closingTag.test(text);
	if (hasOpening && hasClosing) htmlIndicators += 2;
	else if (hasOpening || hasClosing) htmlIndicators += 1;
	if (HTML_PATTERNS.selfClosingTag.test(text)) htmlIndicators += 1;
	if (HTML_PATTERNS.htmlEntity.test(text)) htmlIndicators += 1;
	if (HTML_PATTERNS.doctype.test(text)) htmlIndicators += 2;
	if (HTML_PATTERNS.htmlComment.test(text)) htmlIndicators += 1;
	if (HTML_PATTERNS.htmlAttribute.test(text)) htmlIndicators += 1;
	if (/<(html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input|button|script|style|link|meta|br|hr)\b/i.test(text)) htmlIndicators += 2;
	if (htmlIndicators >= 2) return true;
	return false;
}
const VALID_HTML_ELEMENTS = new Set([
	"html",
	"head",
	"title",
	"base",
	"link",
	"meta",
	"style",
	"body",
	"article",
	"section",
	"nav",
	"aside",
	"h1",
	"h2",
	"h3",
	"h4",
	"h5",
	"h6",
	"header",
	"footer",
	"address",
	"p",
	"hr",
	"pre",
	"blockquote",
	"ol",
	"ul",
	"li",
	"dl",
	"dt",
	"dd",
	"figure",
	"figcaption",
	"main",
	"div",
	"a",
	"em",
	"strong",
	"small",
	"s",
	"cite",
	"q",
	"dfn",
	"abbr",
	"ruby",
	"rt",
	"rp",
	"data",
	"time",
	"code",
	"var",
	"samp",
	"kbd",
	"sub",
	"sup",
	"i",
	"b",
	"u",
	"mark",
	"bdi",
	"bdo",
	"span",
	"br",
	"wbr",
	"img",
	"iframe",
	"embed",
	"object",
	"param",
	"picture",
	"source",
	"video",
	"audio",
	"track",
	"map",
	"area",
	"svg",
	"math",
	"script",
	"noscript",
	"canvas",
	"ins",
	"del",
	"table",
	"caption",
	"colgroup",
	"col",
	"tbody",
	"thead",
	"tfoot",
	"tr",
	"td",
	"th",
	"form",
	"label",
	"input",
	"button",
	"select",
	"datalist",
	"optgroup",
	"option",
	"textarea",
	"output",
	"progress",
	"meter",
	"fieldset",
	"legend",
	"details",
	"summary",
	"dialog",
	"menu",
	"slot",
	"template"
]);
function validateHtml(htmlString) {
	const trimmed = htmlString.trim();
	if (!trimmed) return {
		isValid: false,
		reason: "Output is empty"
	};
	if (trimmed.length > MAX_INPUT_SIZE) return {
		isValid: false,
		reason: "Output exceeds maximum size limit"
	};
	if (/^\s*<\?xml/i.test(trimmed)) return {
		isValid: false,
		reason: "Output appears to be XML, not HTML"
	};
	const document = parse$1(trimmed, { sourceCodeLocationInfo: true });
	const inputLowercase = trimmed.toLowerCase();
	const body = findFirstElement(document, (element) => element.tagName === "body");
	if (!(body !== void 0 && LITERAL_WRAPPER_PATTERNS.body.test(inputLowercase) && hasSourceCodeLocation(body)) && body && hasTopLevelText(body)) return {
		isValid: false,
		reason: "Output must be wrapped in HTML tags"
	};
	if (!findFirstElement(document, (element) => isUserProvidedElement(element, inputLowercase))) return {
		isValid: false,
		reason: "Output does not contain recognized HTML elements"
	};
	return {
		isValid: true,
		reason: "Output is valid HTML"
	};
}
const handleContainsHtml = ({ assertion, outputString, inverse }) => {
	const pass = containsHtml(outputString) !== inverse;
	return {
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : `Expected output to ${inverse ? "not " : ""}contain HTML content`,
		assertion
	};
};
const handleIsHtml = ({ assertion, outputString, inverse }) => {
	const result = validateHtml(outputString);
	const pass = result.isValid !== inverse;
	return {
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : result.reason,
		assertion
	};
};
const STANDARD_SELECT_MODIFIER_PATTERN = "(?:all|distinct)";
const MYSQL_SELECT_MODIFIER_PATTERN = "(?:all|distinct(?:row)?|high_priority|straight_join|sql_(?:big_result|buffer_result|cache|calc_found_rows|no_cache|small_result))";
const IDENTIFIER_PATTERN = "[A-Za-z_][A-Za-z0-9_]*";
function createLikelyMissingCommaPattern(selectModifierPattern) {
	return new RegExp(String.raw`\bselect\s+(?:${selectModifierPattern}\s+)*(?!${selectModifierPattern}\b)${IDENTIFIER_PATTERN}\s+${IDENTIFIER_PATTERN}\s+from\b`, "i");
}
const STANDARD_LIKELY_MISSING_COMMA_PATTERN = createLikelyMissingCommaPattern(STANDARD_SELECT_MODIFIER_PATTERN);
const MYSQL_LIKELY_MISSING_COMMA_PATTERN = createLikelyMissingCommaPattern(MYSQL_SELECT_MODIFIER_PATTERN);
const MYSQL_FAMILY_DATABASES = new Set(["MySQL", "MariaDB"]);
const BRACKET_IDENTIFIER_DATABASES = new Set(["TransactSQL", "Sqlite"]);
const SQL_EXPRESSION_PLACEHOLDER = " ? ";
function getLikelyMissingCommaPattern(databaseType) {
	return MYSQL_FAMILY_DATABASES.has(databaseType) ? MYSQL_LIKELY_MISSING_COMMA_PATTERN : STANDARD_LIKELY_MISSING_COMMA_PATTERN;
}
const DOLLAR_QUOTE_DELIMITER_PATTERN = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/;
function readDollarQuoteDelimiter(sql, start) {
	return DOLLAR_QUOTE_DELIMITER_PATTERN.exec(sql.slice(start))?.[0];
}
function findQuotedTextEnd(sql, start, quote) {
	const closingQuote = quote === "[" ? "]" : quote;
	let cursor = start + 1;
	while (cursor < sql.length) {
		if (closingQuote !== "]" && sql[cursor] === "\\") {
			cursor += 2;
			continue;
		}
		if (sql[cursor] === closingQuote) {
			if (sql[cursor + 1] === closingQuote) {
				cursor += 2;
				continue;
			}
			return cursor + 1;
		}
		cursor++;
	}
	return sql.length;
}
function stripIgnoredSqlText(sql, databaseType) {
	const chunks = [];
	const supportsBracketIdentifiers = BRACKET_IDENTIFIER_DATABASES.has(databaseType);
	let plainTextStart = 0;
	let cursor = 0;
	while (cursor < sql.length) {
		const character = sql[cursor];
		let ignoredTextEnd;
		let replacement = " ";
		if (character === "'" || character === "\"" || character === "`" || character === "[" && supportsBracketIdentifiers) {
			ignoredTextEnd = findQuotedTextEnd(sql, cursor, character);
			replacement = SQL_EXPRESSION_PLACEHOLDER;
		} else if (character === "-" && sql[cursor + 1] === "-" || character === "#") {
			ignoredTextEnd = cursor + 1;
			while (ignoredTextEnd < sql.length && sql[ignoredTextEnd] !== "\r" && sql[ignoredTextEnd] !== "\n") ignoredTextEnd++;
		} else if (character === "/" && sql[cursor + 1] === "*") {
			const commentEnd = sql.indexOf("*/", cursor + 2);
			ignoredTextEnd = commentEnd === -1 ? sql.length : commentEnd + 2;
		} else if (character === "$") {
			const delimiter = readDollarQuoteDelimiter(sql, cursor);
			if (delimiter) {
				const quoteEnd = sql.indexOf(delimiter, cursor + delimiter.length);
				ignoredTextEnd = quoteEnd === -1 ? sql.length : quoteEnd + delimiter.length;
				replacement = SQL_EXPRESSION_PLACEHOLDER;
			}
		}
		if (ignoredTextEnd === void 0) {
			cursor++;
			continue;
		}
		chunks.push(sql.slice(plainTextStart, cursor), replacement);
		cursor = ignoredTextEnd;
		plainTextStart = cursor;
	}
	chunks.push(sql.slice(plainTextStart));
	return chunks.join("");
}
async function createSqlParser() {
	const SqlParser = sqlParserModule.Parser ?? sqlParserModule.default?.Parser;
	if (!SqlParser) throw new Error("node-sql-parser is not installed. Please install it first");
	return new SqlParser();
}
const handleIsSql = async ({ assertion, renderedValue, outputString, inverse }) => {
	let pass = false;
	let databaseType = "MySQL";
	let allowedTables;
	let allowedColumns;
	if (renderedValue && typeof renderedValue === "object") {
		const value = renderedValue;
		databaseType = value.databaseType || "MySQL";
		allowedTables = value.allowedTables;
		allowedColumns = value.allowedColumns;
	}
	if (renderedValue && typeof renderedValue !== "object") throw new Error("is-sql assertion must have a object value.");
	const sqlParser = await createSqlParser();
	const opt = { database: databaseType };
	const failureReasons = [];
	const normalizedSql = outputString.trim();
	if (normalizedSql.length === 0) failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	if (/`/.test(normalizedSql) && (normalizedSql.match(/`/g)?.length ?? 0) % 2 !== 0) failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	const sqlForHeuristics = stripIgnoredSqlText(normalizedSql, databaseType);
	if (getLikelyMissingCommaPattern(databaseType).test(sqlForHeuristics)) failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	if (databaseType === "MySQL" && /\bgenerate_series\s*\(/i.test(normalizedSql)) failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	try {
		sqlParser.astify(outputString, opt);
		pass = !inverse;
	} catch {
		pass = inverse;
		failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	}
	if (failureReasons.length > 0) pass = inverse;
	if (allowedTables) {
		opt.type = "table";
		try {
			sqlParser.whiteListCheck(outputString, allowedTables, opt);
		} catch (err) {
			pass = inverse;
			const error = err;
			let actualTables = [];
			try {
				const { tableList } = sqlParser.parse(outputString, opt);
				actualTables = tableList || [];
			} catch {}
			if (actualTables.length > 0) failureReasons.push(`SQL references unauthorized table(s). Found: [${actualTables.join(", ")}]. Allowed: [${allowedTables.join(", ")}].`);
			else failureReasons.push(`SQL validation failed: ${error.message}.`);
		}
	}
	if (allowedColumns) {
		opt.type = "column";
		const normalizedAllowedColumns = [...allowedColumns];
		for (const item of allowedColumns) {
			const parts = item.split("::");
			if (parts.length === 3 && parts[1] !== "null") {
				const alt = `${parts[0]}::null::${parts[2]}`;
				if (!normalizedAllowedColumns.includes(alt)) normalizedAllowedColumns.push(alt);
			}
		}
		try {
			sqlParser.whiteListCheck(outputString, normalizedAllowedColumns, opt);
		} catch (err) {
			pass = inverse;
			const error = err;
			let actualColumns = [];
			try {
				const { columnList } = sqlParser.parse(outputString, opt);
				actualColumns = columnList || [];
			} catch {}
			if (actualColumns.length > 0) failureReasons.push(`SQL references unauthorized column(s). Found: [${actualColumns.join(", ")}]. Allowed: [${allowedColumns.join(", ")}].`);
			else failureReasons.push(`SQL validation failed: ${error.message}.`);
		}
	}
	if (inverse && pass === false && failureReasons.length === 0) failureReasons.push("The output SQL statement is valid");
	return {
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : failureReasons.join(" "),
		assertion
	};
};
const FENCE_START_PATTERN = /^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\r\n]*)$/;
const FENCE_END_PATTERN = /^[ \t]{0,3}(`{3,}|~{3,})[ \t]*$/;
function extractSqlCodeBlocks(output) {
	const sqlBlocks = [];
	let activeBlock;
	for (const line of output.split(/\r\n?|\n/)) {
		if (!activeBlock) {
			const openingFence = FENCE_START_PATTERN.exec(line);
			if (openingFence) {
				const fence = openingFence[1];
				const language = openingFence[2].trim().toLowerCase();
				activeBlock = {
					body: [],
					fenceCharacter: fence[0],
					fenceLength: fence.length,
					isSql: language === "" || language === "sql"
				};
			}
			continue;
		}
		const closingFence = FENCE_END_PATTERN.exec(line)?.[1];
		if (closingFence?.[0] === activeBlock.fenceCharacter && closingFence.length >= activeBlock.fenceLength) {
			if (activeBlock.isSql) sqlBlocks.push(activeBlock.body.join("\n").trim());
			activeBlock = void 0;
		} else activeBlock.body.push(line);
	}
	return sqlBlocks;
}
const handleContainsSql = async (assertionParams) => {
	const outputString = coerceString(assertionParams.outputString);
	const sqlBlocks = extractSqlCodeBlocks(outputString);
	const candidates = sqlBlocks.length > 0 ? sqlBlocks : [outputString];
	let failureReason = "Output does not contain valid SQL";
	let containsValidSql = false;
	for (const candidate of candidates) {
		if (candidate.trim().length === 0) continue;
		const result = await handleIsSql({
			...assertionParams,
			outputString: candidate,
			inverse: false
		});
		if (result.pass) {
			containsValidSql = true;
			break;
		}
		failureReason = result.reason;
	}
	const pass = assertionParams.inverse ? !containsValidSql : containsValidSql;
	return {
		assertion: assertionParams.assertion,
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : containsValidSql ? "The output SQL statement is valid" : failureReason
	};
};
function getLastOpenTag(stack) {
	return stack.length > 0 ? stack[stack.length - 1] : void 0;
}
function getCodePointLength(codePoint) {
	return codePoint > 65535 ? 2 : 1;
}
function isXmlNameStartCodePoint(codePoint) {
	return codePoint !== void 0 && (codePoint === 58 || codePoint === 95 || codePoint >= 65 && codePoint <= 90 || codePoint >= 97 && codePoint <= 122 || codePoint >= 192 && codePoint <= 214 || codePoint >= 216 && codePoint <= 246 || codePoint >= 248 && codePoint <= 767 || codePoint >= 880 && codePoint <= 893 || codePoint >= 895 && codePoint <= 8191 || codePoint >= 8204 && codePoint <= 8205 || codePoint >= 8304 && codePoint <= 8591 || codePoint >= 11264 && codePoint <= 12271 || codePoint >= 12289 && codePoint <= 55295 || codePoint >= 63744 && codePoint <= 64975 || codePoint >= 65008 && codePoint <= 65533 || codePoint >= 65536 && codePoint <= 983039);
}
function isXmlNameCodePoint(codePoint) {
	return isXmlNameStartCodePoint(codePoint) || codePoint === 45 || codePoint === 46 || codePoint !== void 0 && codePoint >= 48 && codePoint <= 57 || codePoint === 183 || codePoint !== void 0 && codePoint >= 768 && codePoint <= 879 || codePoint !== void 0 && codePoint >= 8255 && codePoint <= 8256;
}
function readXmlName(input, start) {
	const firstCodePoint = input.codePointAt(start);
	if (!isXmlNameStartCodePoint(firstCodePoint)) return;
	let end = start + getCodePointLength(firstCodePoint);
	for (let codePoint = input.codePointAt(end); isXmlNameCodePoint(codePoint);) {
		end += getCodePointLength(codePoint);
		codePoint = input.codePointAt(end);
	}
	return {
		name: input.slice(start, end),
		end
	};
}
function hasDoctypeInternalSubset(doctype) {
	let quote;
	for (let index = 0; index < doctype.length; index++) {
		const char = doctype[index];
		if (quote) {
			if (char === quote) quote = void 0;
			continue;
		}
		if (char === "\"" || char === "'") quote = char;
		else if (char === "[") return true;
	}
	return false;
}
function isXmlWhitespace(char) {
	return char === " " || char === "	" || char === "\r" || char === "\n";
}
function skipXmlWhitespace(input, start) {
	let index = start;
	while (isXmlWhitespace(input[index])) index++;
	return index;
}
function readQuotedLiteral(input, start) {
	const quote = input[start];
	if (quote !== "\"" && quote !== "'") return;
	const closingQuote = input.indexOf(quote, start + 1);
	if (closingQuote === -1) return;
	return {
		value: input.slice(start + 1, closingQuote),
		end: closingQuote + 1
	};
}
function isValidPublicId(value) {
	return /^[\x20\r\na-zA-Z0-9'()+,./:=?;!*#@$_%-]*$/.test(value);
}
function isValidSystemId(value) {
	return !value.includes("#");
}
function preserveExternalEntityReferences(parser) {
	const entities = parser.ENTITIES;
	parser.ENTITIES = new Proxy(entities, { get(target, property, receiver) {
		if (typeof property === "string" && readXmlName(property, 0)?.end === property.length && !Reflect.has(target, property)) return `&${property};`;
		return Reflect.get(target, property, receiver);
	} });
}
function hasValidSystemLiteral(input, start) {
	const literalStart = skipXmlWhitespace(input, start);
	if (literalStart === start) return false;
	const literal = readQuotedLiteral(input, literalStart);
	return Boolean(literal && isValidSystemId(literal.value) && skipXmlWhitespace(input, literal.end) === input.length);
}
function isWellFormedDoctype(doctype) {
	let index = skipXmlWhitespace(doctype, 0);
	if (index === 0) return false;
	const name = readXmlName(doctype, index);
	if (!name) return false;
	index = name.end;
	const externalIdStart = skipXmlWhitespace(doctype, index);
	if (externalIdStart === doctype.length) return true;
	if (externalIdStart === index) return false;
	index = externalIdStart;
	if (doctype.startsWith("SYSTEM", index)) return hasValidSystemLiteral(doctype, index + 6);
	if (doctype.startsWith("PUBLIC", index)) {
		index += 6;
		const publicLiteralStart = skipXmlWhitespace(doctype, index);
		if (publicLiteralStart === index) return false;
		const publicLiteral = readQuotedLiteral(doctype, publicLiteralStart);
		if (!publicLiteral || !isValidPublicId(publicLiteral.value)) return false;
		return hasValidSystemLiteral(doctype, publicLiteral.end);
	}
	return false;
}
function hasDoctypeExternalSubset(doctype) {
	const name = readXmlName(doctype, skipXmlWhitespace(doctype, 0));
	if (!name) return false;
	const externalIdStart = skipXmlWhitespace(doctype, name.end);
	return doctype.startsWith("SYSTEM", externalIdStart) || doctype.startsWith("PUBLIC", externalIdStart);
}
function findTagEnd(input, start) {
	let quote;
	for (let i = start + 1; i < input.length; i++) {
		const char = input[i];
		if (quote) {
			if (char === quote) quote = void 0;
			continue;
		}
		if (char === "\"" || char === "'") quote = char;
		else if (char === "<") return -1;
		else if (char === ">") return i;
	}
	return -1;
}
function findDelimitedDeclarationEnd(input, start, delimiter) {
	for (let i = start; i <= input.length - delimiter.length; i++) if (input.startsWith(delimiter, i)) return i + delimiter.length - 1;
	return input.length - 1;
}
function findDeclarationEnd(input, start) {
	if (input.startsWith("<!--", start)) return findDelimitedDeclarationEnd(input, start + 4, "-->");
	if (input.startsWith("<![CDATA[", start)) return findDelimitedDeclarationEnd(input, start + 9, "]]>");
	let quote;
	let bracketDepth = 0;
	for (let i = start + 2; i < input.length; i++) {
		const char = input[i];
		if (quote) {
			if (char === quote) quote = void 0;
			continue;
		}
		if (char === "\"" || char === "'") quote = char;
		else if (char === "[") bracketDepth++;
		else if (char === "]" && bracketDepth > 0) bracketDepth--;
		else if (char === ">" && bracketDepth === 0) return i;
	}
	return input.length - 1;
}
function findProcessingInstructionEnd(input, start) {
	return findDelimitedDeclarationEnd(input, start + 2, "?>");
}
function isSelfClosingTag(input, start, end) {
	let lastNonWhitespace = end - 1;
	while (lastNonWhitespace > start && /\s/.test(input[lastNonWhitespace])) lastNonWhitespace--;
	return input[lastNonWhitespace] === "/";
}
function readXmlTag(input, start) {
	const nextChar = input[start + 1];
	if (nextChar === void 0) return;
	if (nextChar === "!") return {
		kind: "declaration",
		start,
		end: findDeclarationEnd(input, start)
	};
	if (nextChar === "?") return {
		kind: "declaration",
		start,
		end: findProcessingInstructionEnd(input, start)
	};
	if (nextChar === "/") {
		const name = readXmlName(input, start + 2);
		if (!name) return;
		const end = findTagEnd(input, start);
		return end === -1 ? void 0 : {
			kind: "closing",
			start,
			end,
			name: name.name
		};
	}
	const name = readXmlName(input, start + 1);
	if (!name) return;
	const end = findTagEnd(input, start);
	if (end === -1) return;
	return {
		kind: "opening",
		start,
		end,
		name: name.name,
		selfClosing: isSelfClosingTag(input, start, end)
	};
}
function orderXmlCandidates(candidates) {
	const ordered = [];
	const seen = /* @__PURE__ */ new Set();
	const byParent = /* @__PURE__ */ new Map();
	const candidateStarts = new Set(candidates.map((candidate) => candidate.start));
	const addCandidate = (candidate) => {
		const key = `${candidate.start}:${candidate.end}`;
		if (!seen.has(key)) {
			seen.add(key);
			ordered.push(candidate);
		}
	};
	for (const candidate of candidates) {
		const siblings = byParent.get(candidate.parentStart);
		if (siblings) siblings.push(candidate);
		else byParent.set(candidate.parentStart, [candidate]);
	}
	for (const [parentStart, siblings] of byParent.entries()) {
		if (siblings.length <= 1 || parentStart !== void 0 && candidateStarts.has(parentStart)) continue;
		siblings.sort((a, b) => a.start - b.start || a.end - b.end);
		addCandidate({
			start: siblings[0].start,
			end: siblings[siblings.length - 1].end,
			parentStart
		});
	}
	const maximalCandidates = candidates.filter((candidate) => candidate.parentStart === void 0 || !candidateStarts.has(candidate.parentStart)).sort((a, b) => a.start - b.start || b.end - a.end);
	for (const candidate of maximalCandidates) addCandidate(candidate);
	return ordered;
}
function extractXmlCandidates(outputString) {
	const stack = [];
	const candidates = [];
	for (let i = 0; i < outputString.length; i++) {
		if (outputString[i] !== "<") continue;
		const tag = readXmlTag(outputString, i);
		if (!tag) continue;
		if (tag.kind === "opening") if (tag.selfClosing) candidates.push({
			start: tag.start,
			end: tag.end + 1,
			parentStart: getLastOpenTag(stack)?.start
		});
		else stack.push({
			name: tag.name,
			start: tag.start
		});
		else if (tag.kind === "closing") {
			const openTag = getLastOpenTag(stack);
			if (openTag?.name === tag.name) {
				stack.pop();
				candidates.push({
					start: openTag.start,
					end: tag.end + 1,
					parentStart: getLastOpenTag(stack)?.start
				});
			} else stack.length = 0;
		}
		i = tag.end;
	}
	return orderXmlCandidates(candidates);
}
function hasElementPath(value, path) {
	let current = value;
	for (const key of path) {
		if (current === null || typeof current !== "object") return false;
		if (Array.isArray(current)) {
			const index = Number(key);
			if (!Number.isInteger(index) || index < 0 || String(index) !== key) return false;
			if (current[index] === void 0) return false;
			current = current[index];
			continue;
		}
		const record = current;
		if (record[key] === void 0) return false;
		current = record[key];
	}
	return true;
}
function getMissingElements(parsedXml, requiredElements) {
	if (!requiredElements || requiredElements.length === 0) return [];
	return requiredElements.filter((element) => {
		return !hasElementPath(parsedXml, element.split("."));
	});
}
function validateXmlCandidate(xmlString, requiredElements) {
	const parser = new XMLParser({
		allowBooleanAttributes: true,
		ignoreAttributes: false,
		parseAttributeValue: true,
		parseTagValue: true
	});
	try {
		const missingElements = getMissingElements(parser.parse(xmlString), requiredElements);
		if (missingElements.length > 0) return {
			isValid: false,
			reason: `XML is missing required elements: ${missingElements.join(", ")}`,
			isWellFormed: true
		};
		return {
			isValid: true,
			reason: "XML is valid and contains all required elements",
			isWellFormed: true
		};
	} catch (err) {
		return {
			isValid: false,
			reason: `XML parsing failed: ${err.message}`,
			isWellFormed: false
		};
	}
}
function validateXml(xmlString, requiredElements) {
	let unsupportedReason;
	let doctypeParseError;
	let standalone = false;
	try {
		const parser = new SaxesParser({ xmlns: true });
		parser.on("xmldecl", (declaration) => {
			standalone = declaration.standalone === "yes";
		});
		parser.on("doctype", (doctype) => {
			if (hasDoctypeInternalSubset(doctype)) {
				unsupportedReason = "DTD internal subsets are not supported by is-xml validation";
				throw new Error(unsupportedReason);
			}
			if (!isWellFormedDoctype(doctype)) {
				doctypeParseError = "Malformed DOCTYPE declaration";
				throw new Error(doctypeParseError);
			}
			if (hasDoctypeExternalSubset(doctype) && !standalone) preserveExternalEntityReferences(parser);
		});
		parser.write(xmlString).close();
	} catch (err) {
		if (unsupportedReason) return {
			isValid: false,
			reason: unsupportedReason
		};
		return {
			isValid: false,
			reason: `XML parsing failed: ${doctypeParseError ?? (err instanceof Error ? err.message : String(err))}`
		};
	}
	const result = validateXmlCandidate(xmlString, requiredElements);
	return {
		isValid: result.isValid,
		reason: result.reason
	};
}
function containsXml(outputString, requiredElements) {
	const xmlCandidates = extractXmlCandidates(outputString);
	const wellFormedContainers = [];
	if (xmlCandidates.length === 0) return {
		isValid: false,
		reason: "No XML content found in the output"
	};
	for (const xmlCandidate of xmlCandidates) {
		if (wellFormedContainers.some((container) => xmlCandidate.start >= container.start && xmlCandidate.end <= container.end)) continue;
		const { isValid, isWellFormed, reason } = validateXmlCandidate(outputString.slice(xmlCandidate.start, xmlCandidate.end), requiredElements);
		if (isValid) return {
			isValid: true,
			reason
		};
		if (isWellFormed) wellFormedContainers.push(xmlCandidate);
	}
	return {
		isValid: false,
		reason: "No valid XML content found matching the requirements"
	};
}
const handleIsXml = ({ assertion, renderedValue, outputString, inverse, baseType }) => {
	let requiredElements;
	if (typeof renderedValue === "string") requiredElements = renderedValue.split(",").map((el) => el.trim());
	else if (Array.isArray(renderedValue) && renderedValue.length > 0) requiredElements = renderedValue.map((el) => el.toString());
	else if (renderedValue !== null && typeof renderedValue === "object" && Object.keys(renderedValue).length > 0) if ("requiredElements" in renderedValue && Array.isArray(renderedValue.requiredElements)) requiredElements = renderedValue.requiredElements.map((el) => el.toString());
	else throw new Error("xml assertion must contain a string, array value, or no value");
	const result = (baseType === "is-xml" ? validateXml : containsXml)(outputString, requiredElements);
	const pass = result.isValid !== inverse;
	return {
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : result.reason,
		assertion
	};
};

const HANDLERS = {
  "is-xml": handleIsXml,
  "contains-xml": handleIsXml,
  "is-html": handleIsHtml,
  "is-sql": handleIsSql,
  "contains-sql": handleContainsSql,
};

const PACKAGES = {
  "is-xml": ["saxes", "fast-xml-parser"],
  "contains-xml": ["fast-xml-parser"],
  "is-html": ["parse5"],
  "is-sql": ["node-sql-parser"],
  "contains-sql": ["node-sql-parser"],
};

// One assertion: {baseType, inverse, renderedValue, outputString}; dirs: where packages are.
async function runCheck(req, dirs) {
  const handler = HANDLERS[req.baseType];
  if (!handler) throw new Error(`no check named ${req.baseType}`);
  for (const name of PACKAGES[req.baseType]) {
    const mod = await loadPackage(name, dirs);
    const lib = mod.default && typeof mod.default === "object" ? { ...mod.default, ...mod } : mod;
    if (name === "parse5") parse$1 = lib.parse;
    if (name === "saxes") SaxesParser = lib.SaxesParser;
    if (name === "fast-xml-parser") XMLParser = lib.XMLParser;
    if (name === "node-sql-parser") sqlParserModule = lib;
  }
  const result = await handler({
    assertion: null,
    baseType: req.baseType,
    inverse: req.inverse,
    renderedValue: req.renderedValue === null ? undefined : req.renderedValue,
    outputString: req.outputString,
  });
  return { pass: result.pass, score: result.score, reason: result.reason };
}

module.exports = { runCheck, MissingPackage };
