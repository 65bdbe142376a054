package trace

import "strings"

// QuantityOf returns the quantity implied by a channel name's prefix (the part before the
// first dot, or the whole name): power.* W, energy.* J, clock.* Hz, temp.* degC, util.* %,
// pstate, throttle.* mask. It returns "" for any other name.
func QuantityOf(name string) Quantity {
	prefix, _, _ := strings.Cut(name, ".")
	switch prefix {
	case "power":
		return QPower
	case "energy":
		return QEnergy
	case "clock":
		return QFrequency
	case "temp":
		return QTemperature
	case "util":
		return QUtilization
	case "pstate":
		return QState
	case "throttle":
		return QReasons
	}
	return ""
}

// quantityOfUnit is the inverse of Quantity.Unit; "" for an unknown unit.
func quantityOfUnit(u string) Quantity {
	switch u {
	case "W":
		return QPower
	case "J":
		return QEnergy
	case "Hz":
		return QFrequency
	case "degC":
		return QTemperature
	case "%":
		return QUtilization
	case "pstate":
		return QState
	case "mask":
		return QReasons
	}
	return ""
}

// channelQuantity is the quantity of a channel: from its metadata, else from its name.
func channelQuantity(c Channel) Quantity {
	if c.Quantity != "" {
		return c.Quantity
	}
	return QuantityOf(c.Name)
}

// channelUnit is the unit of a channel: from its metadata, else from its quantity.
func channelUnit(c Channel) string {
	if c.Unit != "" {
		return c.Unit
	}
	return channelQuantity(c).Unit()
}

// inferChannel describes a channel known only by its name (and unit, when one is given).
func inferChannel(gpu int, name, unit, description string) Channel {
	q := quantityOfUnit(unit)
	if q == "" {
		q = QuantityOf(name)
	}
	if unit == "" {
		unit = q.Unit()
	}
	return Channel{
		GPU:         gpu,
		Name:        name,
		Quantity:    q,
		Unit:        unit,
		Description: description,
		Cumulative:  q == QEnergy,
	}
}
