package mappings

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Checked arithmetic for expr: fields. expr-lang computes with Go's
// machine arithmetic: 9223372036854775807 + 1 is -9223372036854775808,
// -x of an int4 -2147483648 is itself, int(1e300) is whatever the CPU
// gives, 1 / 0 is +Inf, and the difference of two times 300 years apart
// is silently 292 years. A document must hold the exact result or the
// row must be rejected, so every expression is compiled with
// checkedArith, which replaces each arithmetic operation by a call of a
// function that computes the same value as expr-lang when it is exact
// and fails otherwise (RunExpr turns the failure into the row's reason).
// The rules are in mappings/README.md, "Expressions: numbers":
//
//   - integers (int2, int4 and int8 columns, integer literals, int(),
//     len()...) compute in 64 bits: + - * unary minus, abs() and sum()
//     whose exact result is beyond int64 fail ("integer overflow");
//   - / is a division of doubles (as expr-lang's), % of integers; a zero
//     divisor fails ("division by zero"), and ** is a power of doubles;
//   - an operation on doubles whose operands are finite and whose result
//     is not (±Inf, NaN: 1e308 * 10, (-8) ** 0.5) fails, and so does a
//     *, / or ** of non-zero operands whose result is 0 (an underflow):
//     the rules of PostgreSQL's float8 operators; NaN and ±Inf read from
//     a column go through as they are;
//   - int(x) of a double truncates toward zero, and fails for NaN, ±Inf
//     and values beyond int64;
//   - a range a..b fails when it has more than exprMaxRange numbers;
//   - time - time fails when the difference is beyond a duration (about
//     292 years);
//   - bitwise functions (bitand, bitshl...) work on the 64-bit two's
//     complement pattern, unchecked, as PostgreSQL's bit operators do.
//
// Literal-only operations that are exact stay as expr-lang folds them
// at compile time; everything else costs one function call per
// operation. Strings (first_name + " " + last_name) are not touched.

// ExprError is an expression's failure on one row: an arithmetic result
// that is not exact, or any other run-time error of the expression
// engine. Its text is one line, for the reject file.
type ExprError struct {
	// Msg says what failed: "integer overflow: 9223372036854775807 + 1
	// is beyond the 64-bit range".
	Msg string
	// Column is where in the expression, 1-based; 0 when unknown.
	Column int
}

func (e *ExprError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s (at column %d)", e.Msg, e.Column)
	}
	return e.Msg
}

// arithError is what the checked functions fail with.
type arithError struct{ msg string }

func (e arithError) Error() string { return e.msg }

// RunExpr evaluates a compiled expression (FieldPlan.Program) on env and
// returns its raw result. Every caller evaluating a mapping's expression
// (the document builder, the oracle) goes through here, so all see the
// same checked arithmetic and the same one-line errors.
func RunExpr(prog *vm.Program, env map[string]any) (any, error) {
	out, err := vm.Run(prog, env)
	if err == nil {
		return out, nil
	}
	e := &ExprError{}
	var fe *file.Error
	if errors.As(err, &fe) {
		e.Column = fe.Column + 1
		if fe.Snippet == "" && fe.Column == 0 {
			e.Column = 0
		}
		e.Msg = fe.Message
		var ae arithError
		if errors.As(fe.Prev, &ae) {
			e.Msg = ae.msg
		}
	} else {
		e.Msg = err.Error()
	}
	e.Msg = exprWords(strings.TrimPrefix(firstLine(e.Msg), "runtime error: "))
	return nil, e
}

// Names of the checked functions: a NUL byte cannot be in a PostgreSQL
// column name or be written in an expression, so none shadows a column
// or is callable by hand.
const (
	fnAdd   = "\x00add"
	fnSub   = "\x00sub"
	fnMul   = "\x00mul"
	fnDiv   = "\x00div"
	fnMod   = "\x00mod"
	fnPow   = "\x00pow"
	fnNeg   = "\x00neg"
	fnRange = "\x00range"
	fnSum   = "\x00sum"
	fnInt   = "\x00int"
	fnAbs   = "\x00abs"
)

// exprMaxRange bounds the numbers of a range a..b, as expr-lang's own
// memory budget (conf.DefaultMemoryBudget) bounds the literal ones.
const exprMaxRange = 1_000_000

var (
	intType      = reflect.TypeOf(0)
	floatType    = reflect.TypeOf(0.0)
	durationType = reflect.TypeOf(time.Duration(0))
	timeType     = reflect.TypeOf(time.Time{})
	anyType      = reflect.TypeOf((*any)(nil)).Elem()
	intsType     = reflect.TypeOf([]int{})
)

// compileChecked compiles an expression over env with checked
// arithmetic. It compiles twice: as written, for expr-lang's own type
// errors (the checked program's calls take any value), then with
// checkedOptions, the program that runs.
func compileChecked(src string, env map[string]any) (*vm.Program, error) {
	if _, err := expr.Compile(src, expr.Env(env)); err != nil {
		return nil, fmt.Errorf("%s", firstLine(err.Error()))
	}
	var constErrs []error
	prog, err := expr.Compile(src, append([]expr.Option{expr.Env(env)}, checkedOptions(&constErrs)...)...)
	if err != nil {
		return nil, fmt.Errorf("internal: the expression does not compile with checked arithmetic (report it): %s", firstLine(err.Error()))
	}
	if len(constErrs) > 0 {
		// An operation of literals that fails would fail on every row.
		return nil, constErrs[0]
	}
	return prog, nil
}

// checkedOptions are the expr options making arithmetic checked: the
// patch and the functions it calls.
func checkedOptions(constErrs *[]error) []expr.Option {
	fn := func(name string, f func(args ...any) (any, error), typ any) expr.Option {
		return expr.Function(name, f, typ)
	}
	bin := new(func(any, any) any)
	un := new(func(any) any)
	return []expr.Option{
		fn(fnAdd, func(a ...any) (any, error) { return checkedAdd(a[0], a[1]) }, bin),
		fn(fnSub, func(a ...any) (any, error) { return checkedSub(a[0], a[1]) }, bin),
		fn(fnMul, func(a ...any) (any, error) { return checkedMul(a[0], a[1]) }, bin),
		fn(fnDiv, func(a ...any) (any, error) { return checkedDiv(a[0], a[1]) }, bin),
		fn(fnMod, func(a ...any) (any, error) { return checkedMod(a[0], a[1]) }, bin),
		fn(fnPow, func(a ...any) (any, error) { return checkedPow(a[0], a[1]) }, bin),
		fn(fnNeg, func(a ...any) (any, error) { return checkedNeg(a[0]) }, un),
		fn(fnRange, func(a ...any) (any, error) { return checkedRange(a[0], a[1]) }, bin),
		fn(fnSum, func(a ...any) (any, error) { return checkedSum(a[0]) }, un),
		fn(fnInt, func(a ...any) (any, error) { return checkedInt(a[0]) }, un),
		fn(fnAbs, func(a ...any) (any, error) { return checkedAbs(a[0]) }, un),
		expr.Patch(checkedArith{constErrs: constErrs}),
	}
}

// checkedArith is the patch (an ast.Visitor, run after expr-lang's type
// check) replacing arithmetic nodes by calls of the checked functions.
// Each call gets the node's type where the checked function returns
// what expr-lang would (binary operators delegate to expr-lang's own
// runtime once the result is known to be exact), else the type it does
// return.
type checkedArith struct {
	// constErrs collects the failures of operations of literals alone.
	constErrs *[]error
}

var binaryFns = map[string]string{"+": fnAdd, "-": fnSub, "*": fnMul, "/": fnDiv, "%": fnMod, "**": fnPow, "^": fnPow, "..": fnRange}

func (p checkedArith) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		name, ok := binaryFns[n.Operator]
		if !ok || !arithOperand(n.Left.Type()) || !arithOperand(n.Right.Type()) {
			return
		}
		if lit, err := literals(n); lit {
			if err == nil {
				return // folded by expr-lang's optimizer, exactly
			}
			*p.constErrs = append(*p.constErrs, err)
		}
		typ := n.Type()
		if n.Operator == ".." {
			typ = intsType
		}
		patch(node, name, typ, n.Left, n.Right)
	case *ast.UnaryNode:
		if n.Operator != "-" || !arithOperand(n.Node.Type()) {
			return
		}
		switch n.Node.(type) {
		case *ast.IntegerNode, *ast.FloatNode:
			return // a literal: -9223372036854775808 cannot be written
		}
		patch(node, fnNeg, negType(n.Node.Type()), n.Node)
	case *ast.BuiltinNode:
		switch n.Name {
		case "sum":
			arg := n.Arguments[0]
			if len(n.Arguments) == 2 {
				// sum(list, predicate) is sum(map(list, predicate)).
				m := &ast.BuiltinNode{Name: "map", Arguments: n.Arguments}
				m.SetLocation(n.Location())
				m.SetType(reflect.TypeOf([]any{}))
				arg = m
			}
			patch(node, fnSum, anyType, arg)
		case "int":
			if len(n.Arguments) == 1 {
				patch(node, fnInt, intType, n.Arguments[0])
			}
		case "abs":
			if len(n.Arguments) == 1 {
				patch(node, fnAbs, anyType, n.Arguments[0])
			}
		}
	}
}

func patch(node *ast.Node, name string, typ reflect.Type, args ...ast.Node) {
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: args}
	if typ == nil {
		typ = anyType
	}
	call.SetType(typ)
	ast.Patch(node, call)
}

// arithOperand reports whether an operand of type t may be a number, a
// duration or a time (an interface may hold one): the operations worth
// checking. A nil type (expr-lang's "unknown", a JSON column) is left to
// the type check's own error.
func arithOperand(t reflect.Type) bool {
	if t == nil {
		return false
	}
	if t == durationType || t == timeType {
		return true
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// negType is the type checkedNeg returns for an operand of type t.
func negType(t reflect.Type) reflect.Type {
	switch {
	case t == durationType:
		return durationType
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return floatType
	case t.Kind() == reflect.Interface:
		return anyType
	}
	return intType
}

// literals reports whether n operates on two number literals, and the
// failure of the operation if it has one (else expr-lang's constant
// folding may keep it: its result is exact).
func literals(n *ast.BinaryNode) (bool, error) {
	var lit func(x ast.Node) (any, bool)
	lit = func(x ast.Node) (any, bool) {
		switch v := x.(type) {
		case *ast.IntegerNode:
			return v.Value, true
		case *ast.FloatNode:
			return v.Value, true
		case *ast.UnaryNode: // -1: a negative literal
			if v.Operator == "-" {
				switch w := v.Node.(type) {
				case *ast.IntegerNode:
					return -w.Value, true
				case *ast.FloatNode:
					return -w.Value, true
				}
			}
		}
		return nil, false
	}
	a, ok1 := lit(n.Left)
	b, ok2 := lit(n.Right)
	if !ok1 || !ok2 {
		return false, nil
	}
	var err error
	switch n.Operator {
	case "+":
		_, err = checkedAdd(a, b)
	case "-":
		_, err = checkedSub(a, b)
	case "*":
		_, err = checkedMul(a, b)
	case "/":
		_, err = checkedDiv(a, b)
	case "%":
		_, err = checkedMod(a, b)
	case "**", "^":
		_, err = checkedPow(a, b)
	case "..":
		_, err = checkedRange(a, b)
	}
	return true, err
}

// intOf is v as an int64 when v is an integer (a duration included);
// err when it is an unsigned integer beyond int64.
func intOf(v any) (i int64, ok bool, err error) {
	switch x := v.(type) {
	case int:
		return int64(x), true, nil
	case int8:
		return int64(x), true, nil
	case int16:
		return int64(x), true, nil
	case int32:
		return int64(x), true, nil
	case int64:
		return x, true, nil
	case time.Duration:
		return int64(x), true, nil
	case uint8:
		return int64(x), true, nil
	case uint16:
		return int64(x), true, nil
	case uint32:
		return int64(x), true, nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return 0, true, arithError{fmt.Sprintf("integer overflow: %d is beyond the 64-bit range", x)}
		}
		return int64(x), true, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, true, arithError{fmt.Sprintf("integer overflow: %d is beyond the 64-bit range", x)}
		}
		return int64(x), true, nil
	}
	return 0, false, nil
}

// floatOf is v as a float64 when v is a number (integers converted as
// expr-lang converts them).
func floatOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	if i, ok, err := intOf(v); ok && err == nil {
		return float64(i), true
	}
	switch x := v.(type) {
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

func isDuration(v any) bool {
	_, ok := v.(time.Duration)
	return ok
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// bothInts returns a and b as int64 when both are integers.
func bothInts(a, b any) (x, y int64, ok bool, err error) {
	x, ok1, err1 := intOf(a)
	y, ok2, err2 := intOf(b)
	if !ok1 || !ok2 {
		return 0, 0, false, nil
	}
	return x, y, true, errors.Join(err1, err2)
}

func overflow(a int64, op string, b int64) error {
	return arithError{fmt.Sprintf("integer overflow: %d %s %d is beyond the 64-bit range", a, op, b)}
}

// fitsInt checks that an int64 result fits expr-lang's int (always on
// the 64-bit platforms denorm is built for).
func fitsInt(r int64, a int64, op string, b int64) error {
	if int64(int(r)) != r {
		return overflow(a, op, b)
	}
	return nil
}

// checkFloat checks a double result of finite-or-not operands.
func checkFloat(a float64, op string, b, r float64, underflow bool) error {
	if finite(a) && finite(b) {
		switch {
		case math.IsNaN(r):
			return arithError{fmt.Sprintf("%v %s %v has no value", a, op, b)}
		case math.IsInf(r, 0):
			return arithError{fmt.Sprintf("overflow: %v %s %v is beyond a double's range", a, op, b)}
		case underflow && r == 0 && a != 0 && b != 0:
			return arithError{fmt.Sprintf("underflow: %v %s %v is too small for a double (it would be 0)", a, op, b)}
		}
	}
	return nil
}

func checkedAdd(a, b any) (any, error) {
	if x, y, ok, err := bothInts(a, b); ok {
		if err != nil {
			return nil, err
		}
		if (y > 0 && x > math.MaxInt64-y) || (y < 0 && x < math.MinInt64-y) {
			return nil, overflow(x, "+", y)
		}
		if err := fitsInt(x+y, x, "+", y); err != nil {
			return nil, err
		}
		if !isDuration(a) && !isDuration(b) {
			return int(x + y), nil // as expr-lang: integers add as int
		}
	} else if x, ok1 := floatOf(a); ok1 {
		if y, ok2 := floatOf(b); ok2 {
			if err := checkFloat(x, "+", y, x+y, false); err != nil {
				return nil, err
			}
			return x + y, nil // as expr-lang: numbers meet as doubles
		}
	}
	return runtime.Add(a, b), nil
}

func checkedSub(a, b any) (any, error) {
	if x, y, ok, err := bothInts(a, b); ok {
		if err != nil {
			return nil, err
		}
		if (y < 0 && x > math.MaxInt64+y) || (y > 0 && x < math.MinInt64+y) {
			return nil, overflow(x, "-", y)
		}
		if err := fitsInt(x-y, x, "-", y); err != nil {
			return nil, err
		}
		if !isDuration(a) && !isDuration(b) {
			return int(x - y), nil
		}
	} else if x, ok1 := floatOf(a); ok1 {
		if y, ok2 := floatOf(b); ok2 {
			if err := checkFloat(x, "-", y, x-y, false); err != nil {
				return nil, err
			}
			return x - y, nil // as expr-lang: numbers meet as doubles
		}
	} else if t, ok := a.(time.Time); ok {
		switch u := b.(type) {
		case time.Time:
			// Time.Sub saturates at ±292 years.
			if d := t.Sub(u); !u.Add(d).Equal(t) {
				return nil, arithError{fmt.Sprintf("%s - %s is beyond a duration (about ±292 years)", t.Format(time.RFC3339Nano), u.Format(time.RFC3339Nano))}
			}
		case time.Duration:
			if u == math.MinInt64 {
				return nil, arithError{"integer overflow: a duration of -9223372036854775808ns cannot be negated"}
			}
		}
	}
	return runtime.Subtract(a, b), nil
}

func checkedMul(a, b any) (any, error) {
	if x, y, ok, err := bothInts(a, b); ok {
		if err != nil {
			return nil, err
		}
		if x != 0 && y != 0 {
			r := x * y
			if r/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
				return nil, overflow(x, "*", y)
			}
			if err := fitsInt(r, x, "*", y); err != nil {
				return nil, err
			}
		}
		if !isDuration(a) && !isDuration(b) {
			return int(x * y), nil
		}
	} else if x, ok1 := floatOf(a); ok1 {
		if y, ok2 := floatOf(b); ok2 {
			if err := checkFloat(x, "*", y, x*y, true); err != nil {
				return nil, err
			}
			return x * y, nil // as expr-lang: numbers meet as doubles
		}
	}
	return runtime.Multiply(a, b), nil
}

func checkedDiv(a, b any) (any, error) {
	if x, ok1 := floatOf(a); ok1 {
		if y, ok2 := floatOf(b); ok2 {
			if y == 0 {
				return nil, arithError{fmt.Sprintf("division by zero: %v / %v", a, b)}
			}
			if err := checkFloat(x, "/", y, x/y, true); err != nil {
				return nil, err
			}
		}
	}
	if _, _, ok, err := bothInts(a, b); ok && err != nil {
		return nil, err
	}
	return runtime.Divide(a, b), nil
}

func checkedMod(a, b any) (any, error) {
	if _, y, ok, err := bothInts(a, b); ok {
		if err != nil {
			return nil, err
		}
		if y == 0 {
			return nil, arithError{fmt.Sprintf("division by zero: %v %% %v", a, b)}
		}
	}
	// MinInt64 % -1 is 0, exactly: Go defines it so.
	return runtime.Modulo(a, b), nil
}

func checkedPow(a, b any) (any, error) {
	x, ok1 := floatOf(a)
	y, ok2 := floatOf(b)
	if ok1 && ok2 {
		if x == 0 && y < 0 {
			return nil, arithError{fmt.Sprintf("division by zero: %v ** %v", a, b)}
		}
		r := math.Pow(x, y)
		if finite(x) && finite(y) {
			switch {
			case math.IsNaN(r):
				return nil, arithError{fmt.Sprintf("%v ** %v has no real value", a, b)}
			case math.IsInf(r, 0):
				return nil, arithError{fmt.Sprintf("overflow: %v ** %v is beyond a double's range", a, b)}
			case r == 0 && x != 0:
				return nil, arithError{fmt.Sprintf("underflow: %v ** %v is too small for a double (it would be 0)", a, b)}
			}
		}
	}
	return runtime.Exponent(a, b), nil
}

func checkedNeg(v any) (any, error) {
	if i, ok, err := intOf(v); ok {
		if err != nil {
			return nil, err
		}
		if i == math.MinInt64 {
			return nil, arithError{fmt.Sprintf("integer overflow: -(%d) is beyond the 64-bit range", i)}
		}
		if d, ok := v.(time.Duration); ok {
			return -d, nil
		}
		if int64(int(-i)) != -i {
			return nil, arithError{fmt.Sprintf("integer overflow: -(%d) is beyond the integer range", i)}
		}
		return int(-i), nil
	}
	switch x := v.(type) {
	case float64:
		return -x, nil
	case float32:
		return -float64(x), nil
	}
	return runtime.Negate(v), nil
}

func checkedAbs(v any) (any, error) {
	if i, ok, err := intOf(v); ok {
		if err != nil {
			return nil, err
		}
		if i >= 0 {
			if _, isDur := v.(time.Duration); isDur {
				return v, nil
			}
			return int(i), nil
		}
		return checkedNeg(v)
	}
	switch x := v.(type) {
	case float64:
		return math.Abs(x), nil
	case float32:
		return math.Abs(float64(x)), nil
	}
	return nil, arithError{fmt.Sprintf("abs of a %T", v)}
}

func checkedRange(a, b any) (any, error) {
	lo, hi, ok, err := bothInts(a, b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, arithError{fmt.Sprintf("a range needs integers, not %T..%T", a, b)}
	}
	if hi < lo {
		return []int{}, nil
	}
	if hi-lo >= exprMaxRange || hi-lo < 0 { // hi-lo < 0: beyond int64
		return nil, arithError{fmt.Sprintf("the range %d..%d has more than %d numbers", lo, hi, exprMaxRange)}
	}
	return runtime.MakeRange(int(lo), int(hi)), nil
}

func checkedSum(list any) (any, error) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil, arithError{fmt.Sprintf("sum of a %T", list)}
	}
	var acc any = 0
	for i := range v.Len() {
		var err error
		if acc, err = checkedAdd(acc, v.Index(i).Interface()); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

func checkedInt(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		return floatToInt(x)
	case float32:
		return floatToInt(float64(x))
	case string:
		i, err := strconv.ParseInt(x, 10, 64)
		if err != nil || int64(int(i)) != i {
			return nil, arithError{fmt.Sprintf("int(%q): not an integer within the 64-bit range", x)}
		}
		return int(i), nil
	}
	if i, ok, err := intOf(v); ok {
		if err != nil {
			return nil, err
		}
		if int64(int(i)) != i {
			return nil, arithError{fmt.Sprintf("int(%d) is beyond the integer range", i)}
		}
		return int(i), nil
	}
	return nil, arithError{fmt.Sprintf("int of a %T", v)}
}

// floatToInt truncates f toward zero, refusing what has no int64.
func floatToInt(f float64) (any, error) {
	t := math.Trunc(f)
	// 2^63 is exactly representable; every double below it in magnitude
	// (and -2^63 itself) converts exactly.
	if !finite(f) || t >= 1<<63 || t < -(1<<63) || int64(int(int64(t))) != int64(t) {
		return nil, arithError{fmt.Sprintf("int(%v) is beyond the 64-bit integer range", f)}
	}
	return int(int64(t)), nil
}
