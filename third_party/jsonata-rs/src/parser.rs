pub mod ast;
pub mod expressions;
mod process;
mod symbol;
mod tokenizer;

use crate::{Error, Result};

use ast::*;
use symbol::Symbol;
use tokenizer::*;

/// Lucille patch: the deepest an expression may nest (operators, brackets, calls, ...).
/// Parsing, processing and dropping the syntax tree recurse on its depth, and a stack
/// overflow aborts the process: deeper expressions are the error U1003. Chosen so that
/// parsing fits in a 2 MiB thread stack (debug builds take several KiB per level; the
/// evaluation of such an expression is limited further by its own depth limit).
pub const MAX_NESTING: usize = if cfg!(debug_assertions) { 200 } else { 300 };

#[derive(Debug)]
pub struct Parser<'a> {
    pub tokenizer: Tokenizer<'a>,
    pub token: Token,
    /// Lucille patch: the nesting of the expression being parsed (see `MAX_NESTING`).
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(source: &'a str) -> Result<Self> {
        let mut tokenizer = Tokenizer::new(source);
        Ok(Self {
            token: tokenizer.next_token()?,
            tokenizer,
            depth: 0,
        })
    }

    pub fn token(&self) -> &Token {
        &self.token
    }

    pub fn next_token(&mut self) -> Result<()> {
        self.token = self.tokenizer.next_token()?;
        Ok(())
    }

    pub fn expect(&mut self, expected: TokenKind) -> Result<()> {
        if self.token.kind == TokenKind::End {
            return Err(Error::S0203ExpectedTokenBeforeEnd(
                self.token.byte_index,
                expected.to_string(),
            ));
        }

        if self.token.kind != expected {
            return Err(Error::S0202UnexpectedToken(
                self.token.char_index,
                expected.to_string(),
                self.token.kind.to_string(),
            ));
        }

        self.next_token()?;

        Ok(())
    }

    pub fn expression(&mut self, bp: u32) -> Result<Ast> {
        let entered = self.depth;
        let result = self.nested_expression(bp);
        self.depth = entered;
        result
    }

    /// Lucille patch: one level of nesting more for each operand and each operator applied
    /// (a chain `a+b+c...` nests as deep as it is long).
    fn nest(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Error::U1003ExpressionTooDeep(self.token.char_index));
        }
        Ok(())
    }

    fn nested_expression(&mut self, bp: u32) -> Result<Ast> {
        self.nest()?;
        let mut last = self.token.clone();
        self.next_token()?;

        let mut left = last.null_denotation(self)?;

        while bp < self.token.left_binding_power() {
            self.nest()?;
            last = self.token.clone();
            self.next_token()?;
            left = last.left_denotation(self, left)?;
        }

        Ok(left)
    }
}

pub fn parse(source: &str) -> Result<Ast> {
    let mut parser = Parser::new(source)?;
    let ast = parser.expression(0)?;
    if !matches!(parser.token().kind, TokenKind::End) {
        return Err(Error::S0201SyntaxError(
            parser.token().byte_index,
            parser.tokenizer.string_from_token(parser.token()),
        ));
    }
    ast.process()
}

#[cfg(test)]
mod tests {
    //! Parsing tests, mostly just to ensure that the parser doesn't fail on valid JSONata. Most
    //! of these examples are taken from the JSONata docs. These are not meant to be tests of the
    //! produced AST, which is proved correct by the integration tests.
    use super::*;
    // Lucille patch: a list of sources instead of `test_case` attributes (the fork has no
    // dev-dependencies, see PATCHES.md).
    const SOURCES: &[&str] = &[
        "Address1.City",
        "Other.`Over 18 ?`",
        "Phone1[0]",
        "Phone2[-1]",
        "Phone3[0].Number",
        "Phone4[[0..1]]",
        "$[0]",
        "$[0].ref",
        "$[0].ref[0]",
        "$.ref",
        "Phone5[type='mobile']",
        "Phone6[type='mobile'].number",
        "Address2.*",
        "*.Postcode1",
        "**.Postcode2",
        "FirstName & ' ' & Surname",
        "Address3.(Street & ', ' & City)",
        "5&0&true",
        "Numbers1[0] + Numbers[1]",
        "Numbers2[0] - Numbers[1]",
        "Numbers3[0] * Numbers[1]",
        "Numbers4[0] / Numbers[1]",
        "Numbers5[0] % Numbers[1]",
        "Numbers6[0] = Numbers[5]",
        "Numbers7[0] != Numbers[5]",
        "Numbers8[0] < Numbers[5]",
        "Numbers9[0] <= Numbers[5]",
        "Numbers10[0] > Numbers[5]",
        "Numbers11[0] >= Numbers[5]",
        "\"01962 001234\" in Phone.number",
        "(Numbers12[2] != 0) and (Numbers[5] != Numbers[1])",
        "(Numbers13[2] != 0) or (Numbers[5] = Numbers[1])",
        "Email1.[address]",
        "[Address4, Other.`Alternative.Address`].City",
        "Phone7.{type: number}",
        "Phone8{type: number}",
        "Phone9{type: number[]}",
        "(5 + 3) * 4",
        "(expr1; expr2; expr3)",
        "Account2.Order.Product^(Price)",
        "Account3.Order.Product^(>Price)",
        "Account4.Order.Product^(>Price, <Quantity)",
        "Account5.Order.Product^(Price * Quantity)",
        "student[type='fulltime']^(DoB).name",
        "/[0-9]+/",
        r#"
        Invoice.(
          $p := Product.Price;
          $q := Product.Quantity;
          $p * $q
        )
    "#,
        r#"
        (
          $volume := function($l, $w, $h){ $l * $w * $h };
          $volume(10, 10, 5);
        )
    "#,
        r#"
        (
          $factorial:= function($x){ $x <= 1 ? 1 : $x * $factorial($x-1) };
          $factorial(4)
        )
    "#,
        r#"
        (
          $factorial := function($x){(
            $iter := function($x, $acc) {
              $x <= 1 ? $acc : $iter($x - 1, $x * $acc)
            };
            $iter($x, 1)
          )};
          $factorial(170)
        )
    "#,
        r#"
        (
          $twice := function($f) { function($x){ $f($f($x)) } };
          $add3 := function($y){ $y + 3 };
          $add6 := $twice($add3);
          $add6(7)
        )
    "#,
        r#"
        Account.(
          $AccName := function() { $.'Account Name' };

          Order[OrderID = 'order104'].Product.{
            'Account': $AccName(),
            'SKU-' & $string(ProductID): $.'Product Name'
          }
        )
    "#,
        r#"
        (
          $firstN := $substring(?, 0, ?);
          $first5 := $firstN(?, 5);
          $first5("Hello, World")
        )
    "#,
        "Customer.Email ~> $substringAfter(\"@\") ~> $substringBefore(\".\") ~> $uppercase()",
        // //     r#"
        //     Account.Order.Product.{
        //       'Product': `Product Name`,
        //       'Order': %.OrderID,
        //       'Account': %.%.`Account Name`
        //     }
        // "# ; "parent operator"
        // )]
        // //     r#"
        //     library.books#$i['Kernighan' in authors].{
        //       'title': title,
        //       'index': $i
        //     }
        // "# ; "context variables 1"
        // )]
        // //     r#"
        //     library.loans@$l.books@$b[$l.isbn=$b.isbn].{
        //       'title': $b.title,
        //       'customer': $l.customer
        //     }
        // "# ; "context variables 2"
        // )]
        // //     r#"
        //     (library.loans)@$l.(catalog.books)@$b[$l.isbn=$b.isbn].{
        //       'title': $b.title,
        //       'customer': $l.customer
        //     }
        // "# ; "context variables 3"
        // )]
        "payload ~> |Account.Order.Product|{'Price': Price * 1.2}|",
        "$ ~> |Account.Order.Product|{'Total': Price * Quantity}, ['Price', 'Quantity']|",
        r#"
        /* Long-winded expressions might need some explanation */
        (
          $pi := 3.1415926535897932384626;
          /* JSONata is not known for its graphics support! */
          $plot := function($x) {(
            $floor := $string ~> $substringBefore(?, '.') ~> $number;
            $index := $floor(($x + 1) * 20 + 0.5);
            $join([0..$index].('.')) & 'O' & $join([$index..40].('.'))
          )};

          /* Factorial is the product of the integers 1..n */
          $product := function($a, $b) { $a * $b };
          $factorial := function($n) { $n = 0 ? 1 : $reduce([1..$n], $product) };

          $sin := function($x){ /* define sine in terms of cosine */
            $cos($x - $pi/2)
          };
          $cos := function($x){ /* Derive cosine by expanding Maclaurin series */
            $x > $pi ? $cos($x - 2 * $pi) : $x < -$pi ? $cos($x + 2 * $pi) :
              $sum([0..12].($power(-1, $) * $power($x, 2*$) / $factorial(2*$)))
          };

          [0..24].$sin($*$pi/12).$plot($)
        )
    "#,
    ];

    #[test]
    fn nesting_beyond_the_limit_is_an_error_not_a_stack_overflow() {
        // Run where a worker thread would: a 2 MiB stack.
        let deep = |text: String| {
            std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || parse(&text).map(|_| ()).map_err(|e| e.code().to_string()))
                .expect("thread")
                .join()
                .expect("no stack overflow")
        };
        let n = MAX_NESTING / 2 - 2;
        assert_eq!(deep(format!("{}1{}", "(".repeat(n), ")".repeat(n))), Ok(()));
        assert_eq!(deep(format!("1{}", "+1".repeat(MAX_NESTING - 2))), Ok(()));
        assert_eq!(deep(format!("{}1", "-".repeat(MAX_NESTING - 2))), Ok(()));
        let too_deep = MAX_NESTING * 40;
        for text in [
            format!("{}1{}", "(".repeat(too_deep), ")".repeat(too_deep)),
            format!("1{}", "+1".repeat(too_deep)),
            format!("{}1", "-".repeat(too_deep)),
            "[".repeat(too_deep),
            "{'a':".repeat(too_deep),
            "$f(".repeat(too_deep),
            "a.".repeat(too_deep) + "a",
        ] {
            assert_eq!(deep(text), Err("U1003".to_string()));
        }
    }

    #[test]
    fn parser_tests() {
        for source in SOURCES {
            parse(source).unwrap_or_else(|e| panic!("failed to parse {source}: {e}"));
        }
    }
}
