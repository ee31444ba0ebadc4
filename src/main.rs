fn main() {
    println!("mbag");
}
