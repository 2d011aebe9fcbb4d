package trend

// SetFastWindow changes the fast window's tuning for the sensitivity test and returns
// a function that restores it.
func SetFastWindow(fraction, rateFactor float64) (restore func()) {
	f, k := fastFraction, fastRateFactor
	fastFraction, fastRateFactor = fraction, rateFactor
	return func() { fastFraction, fastRateFactor = f, k }
}
