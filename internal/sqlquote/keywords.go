package sqlquote

// keywords are DuckDB's keywords that are not "unreserved" (categories
// reserved, type_function and column_name of duckdb_keywords(), DuckDB
// 1.5 and 2.0): written bare as a name, some of them fail to parse
// (ATTACH ... AS select) and the others parse only in some places, so
// IdentIfNeeded quotes all of them. TestKeywordsOfRealDuckDB checks the
// list against the real DuckDB.
var keywords = map[string]bool{
	"all": true, "analyse": true, "analyze": true, "and": true, "anti": true,
	"any": true, "array": true, "as": true, "asc": true, "asof": true,
	"asymmetric": true, "at": true, "authorization": true, "between": true,
	"bigint": true, "binary": true, "bit": true, "boolean": true,
	"both": true, "by": true, "case": true, "cast": true, "char": true,
	"character": true, "check": true, "coalesce": true, "collate": true,
	"collation": true, "column": true, "columns": true, "concurrently": true,
	"constraint": true, "create": true, "cross": true, "dec": true,
	"decimal": true, "default": true, "deferrable": true, "desc": true,
	"describe": true, "distinct": true, "do": true, "else": true, "end": true,
	"except": true, "exists": true, "extract": true, "false": true,
	"fetch": true, "float": true, "for": true, "foreign": true,
	"freeze": true, "from": true, "full": true, "generated": true,
	"glob": true, "group": true, "grouping": true, "grouping_id": true,
	"having": true, "ilike": true, "in": true, "initially": true,
	"inner": true, "inout": true, "int": true, "integer": true,
	"intersect": true, "interval": true, "into": true, "is": true,
	"isnull": true, "join": true, "lambda": true, "lateral": true,
	"leading": true, "left": true, "like": true, "limit": true, "map": true,
	"national": true, "natural": true, "nchar": true, "none": true,
	"not": true, "notnull": true, "null": true, "nullif": true,
	"numeric": true, "offset": true, "on": true, "only": true, "or": true,
	"order": true, "out": true, "outer": true, "overlaps": true,
	"overlay": true, "pivot": true, "pivot_longer": true, "pivot_wider": true,
	"placing": true, "position": true, "positional": true, "precision": true,
	"primary": true, "qualify": true, "real": true, "references": true,
	"returning": true, "right": true, "row": true, "select": true,
	"semi": true, "setof": true, "show": true, "similar": true,
	"smallint": true, "some": true, "struct": true, "substring": true,
	"summarize": true, "symmetric": true, "table": true, "tablesample": true,
	"then": true, "time": true, "timestamp": true, "to": true,
	"trailing": true, "treat": true, "trim": true, "true": true,
	"try_cast": true, "tuple": true, "union": true, "unique": true,
	"unpack": true, "unpivot": true, "using": true, "values": true,
	"varchar": true, "variadic": true, "verbose": true, "when": true,
	"where": true, "window": true, "with": true, "xmlattributes": true,
	"xmlconcat": true, "xmlelement": true, "xmlexists": true,
	"xmlforest": true, "xmlnamespaces": true, "xmlparse": true, "xmlpi": true,
	"xmlroot": true, "xmlserialize": true, "xmltable": true,
}
